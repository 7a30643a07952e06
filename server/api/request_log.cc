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

// What the handler learnt about a call that its log line reports.
struct CallNotes {
  std::string principal;
  bool admin = false;
  std::string failure;     // the own message of a service failure (status_mapping.h)
  std::string request_id;  // the request id that failure names (possibly drawn by the server)
};

struct Notes {
  absl::Mutex mu;
  absl::flat_hash_map<const grpc::ServerContextBase*, CallNotes> by_call ABSL_GUARDED_BY(mu);
};

Notes& AllCallNotes() {
  static Notes* const notes = new Notes;  // never destroyed: calls may outlive main
  return *notes;
}

CallNotes TakeCallNotes(const grpc::ServerContextBase* call) {
  Notes& n = AllCallNotes();
  absl::MutexLock lock(&n.mu);
  auto it = n.by_call.find(call);
  if (it == n.by_call.end()) return CallNotes();
  CallNotes notes = std::move(it->second);
  n.by_call.erase(it);
  return notes;
}

// A failure's message in the log: long enough for libpq's text, bounded like every logged string.
constexpr size_t kMaxLoggedFailureBytes = 512;

// The string field `path` ("dataset", "query.dataset", "header.name") of `message`, or "".
std::string StringField(const google::protobuf::Message& message,
                        const std::vector<const char*>& path) {
  const google::protobuf::Message* m = &message;
  for (size_t i = 0; i < path.size(); ++i) {
    const google::protobuf::FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(path[i]);
    if (f == nullptr || f->is_repeated()) return "";
    const google::protobuf::Reflection* r = m->GetReflection();
    if (i + 1 < path.size()) {
      if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE ||
          !r->HasField(*m, f)) {
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
    if (info_->server_context() != nullptr) TakeCallNotes(info_->server_context());
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
        const CallNotes notes = TakeCallNotes(info_->server_context());
        if (!notes.principal.empty()) fields.emplace_back("analyst", notes.principal);
        if (!dataset_.empty()) fields.emplace_back("dataset", dataset_);
        const std::string& request_id = request_id_.empty() ? notes.request_id : request_id_;
        if (!request_id.empty()) fields.emplace_back("request_id", request_id);
        fields.emplace_back(
            "status", absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())));
        if (!notes.failure.empty()) {
          fields.emplace_back("error", notes.failure.substr(0, kMaxLoggedFailureBytes));
        }
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

void NoteCallPrincipal(const grpc::ServerContextBase* call, const std::string& name, bool admin) {
  Notes& n = AllCallNotes();
  absl::MutexLock lock(&n.mu);
  CallNotes& notes = n.by_call[call];
  notes.principal = name;
  notes.admin = admin;
}

bool CallIsAdmin(const grpc::ServerContextBase* call) {
  Notes& n = AllCallNotes();
  absl::MutexLock lock(&n.mu);
  auto it = n.by_call.find(call);
  return it != n.by_call.end() && it->second.admin;
}

void NoteCallFailure(const grpc::ServerContextBase* call, const std::string& detail,
                     const std::string& request_id) {
  Notes& n = AllCallNotes();
  absl::MutexLock lock(&n.mu);
  CallNotes& notes = n.by_call[call];
  notes.failure = detail;
  notes.request_id = request_id;
}

grpc::experimental::Interceptor* RequestLogFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RequestLog(info);
}

}  // namespace dpq::api
