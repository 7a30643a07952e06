#include "server/api/request_log.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/base/logging.h"

namespace dpq::api {
namespace {

using grpc::experimental::InterceptionHookPoints;

// Client-supplied strings are logged at most this long (a 1 MB name must not make a 1 MB line).
constexpr size_t kMaxLoggedBytes = 64;

struct Principals {
  absl::Mutex mu;
  absl::flat_hash_map<const grpc::ServerContextBase*, std::string> by_call ABSL_GUARDED_BY(mu);
};

Principals& CallPrincipals() {
  static Principals* const principals = new Principals;  // never destroyed: calls may outlive main
  return *principals;
}

std::string TakeCallPrincipal(const grpc::ServerContextBase* call) {
  Principals& p = CallPrincipals();
  absl::MutexLock lock(&p.mu);
  auto it = p.by_call.find(call);
  if (it == p.by_call.end()) return "";
  std::string name = std::move(it->second);
  p.by_call.erase(it);
  return name;
}

// The string field `path` ("dataset", "query.dataset", "header.name") of `message`, or "".
std::string StringField(const google::protobuf::Message& message, const std::vector<const char*>& path) {
  const google::protobuf::Message* m = &message;
  for (size_t i = 0; i < path.size(); ++i) {
    const google::protobuf::FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(path[i]);
    if (f == nullptr || f->is_repeated()) return "";
    const google::protobuf::Reflection* r = m->GetReflection();
    if (i + 1 < path.size()) {
      if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE || !r->HasField(*m, f)) {
        return "";
      }
      m = &r->GetMessage(*m, f);
    } else {
      if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_STRING) return "";
      std::string v = r->GetString(*m, f);
      if (v.size() > kMaxLoggedBytes) v.resize(kMaxLoggedBytes);
      return v;
    }
  }
  return "";
}

class RequestLog : public grpc::experimental::Interceptor {
 public:
  explicit RequestLog(grpc::experimental::ServerRpcInfo* info)
      : info_(info),
        method_(info->method() != nullptr ? info->method() : ""),
        // Only dpq's own services carry protobuf messages through the interceptor; gRPC's health
        // service handles raw byte buffers, so its messages are never read here.
        dpq_(absl::StartsWith(method_, "/dpq.v1.")),
        start_(absl::Now()) {
    if (!method_.empty() && method_[0] == '/') method_.erase(0, 1);
  }

  ~RequestLog() override {
    if (info_->server_context() != nullptr) TakeCallPrincipal(info_->server_context());
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (dpq_ && !seen_message_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      seen_message_ = true;  // the first message names the dataset (a stream's header)
      if (const void* raw = methods->GetRecvMessage(); raw != nullptr) {
        const auto& m = *static_cast<const google::protobuf::Message*>(raw);
        dataset_ = StringField(m, {"dataset"});
        if (dataset_.empty()) dataset_ = StringField(m, {"query", "dataset"});
        if (dataset_.empty()) dataset_ = StringField(m, {"header", "name"});
        request_id_ = StringField(m, {"request_id"});
      }
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      const LogLevel level = dpq_ ? LogLevel::kInfo : LogLevel::kDebug;  // probes are frequent
      if (LogEnabled(level)) {
        std::vector<LogField> fields = {{"rpc", method_}};
        const std::string analyst = TakeCallPrincipal(info_->server_context());
        if (!analyst.empty()) fields.emplace_back("analyst", analyst);
        if (!dataset_.empty()) fields.emplace_back("dataset", dataset_);
        if (!request_id_.empty()) fields.emplace_back("request_id", request_id_);
        fields.emplace_back("status", absl::StatusCodeToString(
                                          static_cast<absl::StatusCode>(status.error_code())));
        fields.emplace_back("duration_ms", absl::ToDoubleMilliseconds(absl::Now() - start_));
        Log(level, "rpc", fields);
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  std::string method_;
  const bool dpq_;
  const absl::Time start_;
  bool seen_message_ = false;
  std::string dataset_, request_id_;
};

}  // namespace

void NoteCallPrincipal(const grpc::ServerContextBase* call, const std::string& name) {
  Principals& p = CallPrincipals();
  absl::MutexLock lock(&p.mu);
  p.by_call[call] = name;
}

grpc::experimental::Interceptor* RequestLogFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RequestLog(info);
}

}  // namespace dpq::api
