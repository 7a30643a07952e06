// The admin-log entry of an admin RPC (store/admin_log.h): who acted, what, on what.
#ifndef DPQ_SERVER_API_ADMIN_ACTIONS_H_
#define DPQ_SERVER_API_ADMIN_ACTIONS_H_

#include <string>
#include <utility>

#include "server/store/audit_chain.h"
#include "server/store/principal_store.h"

namespace dpq::api {

inline store::AdminAction Logged(const store::Principal& admin, std::string action,
                                 std::string target, std::string details = "") {
  return store::AdminAction{admin.name, std::move(action), std::move(target), std::move(details)};
}

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_ADMIN_ACTIONS_H_
