// A shard server's libpq URL (postgresql://USER:PASSWORD@HOST:PORT/DBNAME), parsed by libpq's own
// PQconninfoParse: the same reading libpq and postgres_fdw give it, never a hand-written parser.
// The URL carries a password: no message built here quotes the URL or any part of it that could
// hold the password.
#ifndef DPQ_SERVER_STORE_SHARD_URL_H_
#define DPQ_SERVER_STORE_SHARD_URL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpq::store {

struct ShardUrl {
  std::string host;  // a host name, an address, or a unix socket directory (starts with '/')
  int port = 5432;
  std::string dbname, user;
  std::string password;  // may be empty (the shard does not ask for one)
  std::string sslmode;   // empty: libpq's default
};

// INVALID_ARGUMENT when `url` is not a postgresql:// (or postgres://) URL, names several hosts,
// lacks the host, the database or the user, has a port outside 1-65535, or sets a connection
// option other than sslmode (shard servers take no others). Messages name the part that is wrong,
// never its value.
absl::StatusOr<ShardUrl> ParseShardUrl(absl::string_view url);

// A libpq keyword=value connection string for `u` (values single-quoted, \ and ' escaped), with
// connect_timeout `connect_timeout_s` and the application name `application` (which the shard's
// pg_stat_activity and logs show). It holds the password: never log it or put it in a message.
std::string ShardConninfo(const ShardUrl& u, int connect_timeout_s, absl::string_view application);

// "host:port" for messages and listings ("[::1]:5432" for an IPv6 address; a socket directory is
// shown as it is).
std::string ShardAddress(const std::string& host, int port);

// `text` with every occurrence of `secret` replaced by "***" (a no-op for an empty secret): for
// libpq's own messages, which name the user and the host but should never carry the password.
std::string WithoutSecret(std::string text, const std::string& secret);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SHARD_URL_H_
