#include "server/store/postgres/process.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

extern char** environ;

namespace dpq::store {

absl::StatusOr<RunAsUser> LookUpUser(const std::string& name) {
  std::vector<char> buf(16384);
  struct passwd pwd;
  struct passwd* found = nullptr;
  int rc = getpwnam_r(name.c_str(), &pwd, buf.data(), buf.size(), &found);
  if (rc != 0 || found == nullptr) {
    return absl::NotFoundError(absl::StrCat("system user \"", name, "\" does not exist"));
  }
  RunAsUser user;
  user.name = name;
  user.uid = pwd.pw_uid;
  user.gid = pwd.pw_gid;
  int ngroups = 64;
  std::vector<gid_t> groups(ngroups);
  if (getgrouplist(name.c_str(), pwd.pw_gid, groups.data(), &ngroups) < 0) {
    groups.resize(ngroups);
    if (getgrouplist(name.c_str(), pwd.pw_gid, groups.data(), &ngroups) < 0) ngroups = 0;
  }
  groups.resize(ngroups);
  user.groups = std::move(groups);
  return user;
}

namespace {

// The child's environment: ours, with each variable that `extra_env` sets replaced by its entry
// there. The pointers stay valid while `extra_env` and environ do; null-terminated for execve.
std::vector<char*> ChildEnvironment(const std::vector<std::string>& extra_env) {
  std::vector<char*> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    absl::string_view entry(*e);
    absl::string_view key = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const std::string& x : extra_env) {
      if (absl::string_view(x).substr(0, x.find('=')) == key) overridden = true;
    }
    if (!overridden) env.push_back(*e);
  }
  for (const std::string& e : extra_env) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  return env;
}

// In the forked child: stdin from /dev/null, stdout and stderr into the pipe, the user switched,
// then execve. Only async-signal-safe calls: the parent may have other threads.
[[noreturn]] void ExecChild(int devnull, int out_write, const absl::optional<RunAsUser>& as,
                            char* const* args, char* const* env) {
  dup2(devnull, 0);
  dup2(out_write, 1);
  dup2(out_write, 2);
  closefrom(3);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  if (chdir("/") != 0) _exit(126);
  if (as.has_value()) {
    if (setgroups(as->groups.size(), as->groups.data()) != 0 || setgid(as->gid) != 0 ||
        setuid(as->uid) != 0) {
      static const char kMsg[] = "RunProcess: could not switch user\n";
      (void)!write(2, kMsg, sizeof(kMsg) - 1);
      _exit(126);
    }
  }
  execve(args[0], args, env);
  static const char kMsg[] = "RunProcess: execve failed: ";
  (void)!write(2, kMsg, sizeof(kMsg) - 1);
  (void)!write(2, args[0], strlen(args[0]));
  (void)!write(2, "\n", 1);
  _exit(127);
}

// Everything readable from `fd` until end of file (or a read error other than EINTR).
std::string ReadUntilEof(int fd) {
  std::string output;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  return output;
}

// Waits for `pid` to end: its exit code, or 128 + the signal that killed it.
absl::StatusOr<int> WaitForExitCode(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return absl::InternalError(absl::StrCat("waitpid: ", strerror(errno)));
    }
  }
  int exit_code = -1;  // ProcessResult's default: neither exited nor killed by a signal
  if (WIFEXITED(status)) {
    exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit_code = 128 + WTERMSIG(status);
  }
  return exit_code;
}

}  // namespace

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const absl::optional<RunAsUser>& as,
                                         const std::vector<std::string>& extra_env) {
  if (argv.empty()) return absl::InvalidArgumentError("RunProcess: empty argv");
  // Everything the child touches is prepared before fork(): after fork() in a multi-threaded
  // process only async-signal-safe calls are allowed.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::vector<char*> env = ChildEnvironment(extra_env);

  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) {
    close(out[0]);
    close(out[1]);
    return absl::InternalError(absl::StrCat("open /dev/null: ", strerror(errno)));
  }

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(out[0]);
    close(out[1]);
    close(devnull);
    return absl::InternalError(absl::StrCat("fork: ", strerror(err)));
  }
  if (pid == 0) ExecChild(devnull, out[1], as, args.data(), env.data());

  close(out[1]);
  close(devnull);
  ProcessResult result;
  result.output = ReadUntilEof(out[0]);
  close(out[0]);
  ASSIGN_OR_RETURN(result.exit_code, WaitForExitCode(pid));
  return result;
}

std::string LastLines(const std::string& text, int max_lines) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') --end;
  size_t pos = end;
  int lines = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++lines == max_lines) break;
    --pos;
  }
  return text.substr(pos, end - pos);
}

}  // namespace dpq::store
