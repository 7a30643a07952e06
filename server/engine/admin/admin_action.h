// The admin-log entry of an admin action (store/admin_log.h): who acted, what, on what.
#ifndef DPQ_SERVER_ENGINE_ADMIN_ADMIN_ACTION_H_
#define DPQ_SERVER_ENGINE_ADMIN_ADMIN_ACTION_H_

#include <string>
#include <utility>

#include "server/store/audit_chain.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

inline store::AdminAction Logged(const store::Principal& admin, std::string action,
                                 std::string target, std::string details = "") {
  return store::AdminAction{admin.name, std::move(action), std::move(target), std::move(details)};
}

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ADMIN_ADMIN_ACTION_H_
