// What dpqd reports as dpq_build_info{version,git_sha}: the project version and the commit it was
// built from ("unknown" outside a git checkout without DPQ_GIT_SHA). Generated at build time by
// server/build_info.cmake.
#ifndef DPQ_SERVER_BUILD_INFO_H_
#define DPQ_SERVER_BUILD_INFO_H_

namespace dpq {

const char* BuildVersion();
const char* BuildGitSha();

}  // namespace dpq

#endif  // DPQ_SERVER_BUILD_INFO_H_
