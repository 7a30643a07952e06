// Running a child program synchronously, optionally as another user, capturing its output.
// Used to drive initdb/pg_ctl/psql; kept free of libpqxx so tests can use it too.
#ifndef DPQ_SERVER_STORE_POSTGRES_PROCESS_H_
#define DPQ_SERVER_STORE_POSTGRES_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"

namespace dpq::store {

// Credentials a child switches to (setgroups/setgid/setuid) before exec. Only meaningful when the
// caller is root.
struct RunAsUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (getgrouplist)
};

// Looks up `name` in the password database. NOT_FOUND when the user does not exist.
absl::StatusOr<RunAsUser> LookUpUser(const std::string& name);

struct ProcessResult {
  int exit_code = -1;  // exit status, or 128+signal when killed by a signal
  std::string output;  // stdout and stderr interleaved
};

// Runs argv[0] (an absolute path) with argv, stdin from /dev/null, stdout+stderr captured, every other
// file descriptor closed, working directory "/", and waits for it. When `as` is set the child drops to
// that user first (the caller must be root). The environment is inherited; `extra_env` entries
// ("K=V") are added, replacing inherited variables of the same name. Returns INTERNAL only when the child could not be started; a non-zero exit is
// reported in ProcessResult, not as an error.
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const absl::optional<RunAsUser>& as = absl::nullopt,
                                         const std::vector<std::string>& extra_env = {});

// Returns the last `max_lines` lines of `text` (for error messages quoting a log).
std::string LastLines(const std::string& text, int max_lines);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_POSTGRES_PROCESS_H_
