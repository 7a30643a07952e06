#include "server/store/shard_url.h"

#include <libpq-fe.h>

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace dpq::store {
namespace {

constexpr char kUrlForm[] = "postgresql://USER:PASSWORD@HOST:PORT/DBNAME";

absl::Status BadUrl(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("url: ", why, " (expected ", kUrlForm,
                                                 "; the URL is not shown: it may hold a "
                                                 "password)"));
}

struct ConninfoFree {
  void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
};

}  // namespace

absl::StatusOr<ShardUrl> ParseShardUrl(absl::string_view url) {
  if (!absl::StartsWith(url, "postgresql://") && !absl::StartsWith(url, "postgres://")) {
    return BadUrl("must start with postgresql://");
  }
  if (url.find('\0') != absl::string_view::npos) return BadUrl("contains a NUL byte");
  char* error = nullptr;
  // libpq's error text may quote a malformed part of the URL, which could be the password: it is
  // freed unread.
  std::unique_ptr<PQconninfoOption, ConninfoFree> options(
      PQconninfoParse(std::string(url).c_str(), &error));
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return BadUrl("libpq cannot parse it");
  ShardUrl out;
  std::string port;
  for (const PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const absl::string_view key(o->keyword);
    if (key == "host") {
      out.host = o->val;
    } else if (key == "port") {
      port = o->val;
    } else if (key == "dbname") {
      out.dbname = o->val;
    } else if (key == "user") {
      out.user = o->val;
    } else if (key == "password") {
      out.password = o->val;
    } else if (key == "sslmode") {
      out.sslmode = o->val;
    } else {
      return BadUrl(absl::StrCat("the connection option ", key,
                                 " is not supported for shard servers (only sslmode is)"));
    }
  }
  if (out.host.empty()) return BadUrl("the host is missing");
  if (absl::StrContains(out.host, ',')) return BadUrl("names several hosts; give one");
  if (out.dbname.empty()) return BadUrl("the database name is missing");
  if (out.user.empty()) return BadUrl("the user is missing");
  if (!port.empty()) {
    int value = 0;
    if (!absl::SimpleAtoi(port, &value) || value < 1 || value > 65535) {
      return BadUrl("the port must be a number from 1 to 65535");
    }
    out.port = value;
  }
  return out;
}

std::string ShardConninfo(const ShardUrl& u, int connect_timeout_s, absl::string_view application) {
  auto quoted = [](absl::string_view v) {
    std::string out = "'";
    for (char c : v) {
      if (c == '\\' || c == '\'') out += '\\';
      out += c;
    }
    return out + "'";
  };
  std::string info =
      absl::StrCat("host=", quoted(u.host), " port=", u.port, " dbname=", quoted(u.dbname),
                   " user=", quoted(u.user), " connect_timeout=", connect_timeout_s,
                   " application_name=", quoted(application));
  if (!u.password.empty()) absl::StrAppend(&info, " password=", quoted(u.password));
  if (!u.sslmode.empty()) absl::StrAppend(&info, " sslmode=", quoted(u.sslmode));
  return info;
}

std::string ShardAddress(const std::string& host, int port) {
  if (absl::StrContains(host, ':') && !absl::StartsWith(host, "/")) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

std::string WithoutSecret(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  return absl::StrReplaceAll(text, {{secret, "***"}});
}

}  // namespace dpq::store
