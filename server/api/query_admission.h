// Per-analyst admission of queries: at most `max_concurrent` queries of one
// principal in flight in this dpqd, and at most `max_per_minute` admitted in any 60-second window.
// A refusal is RESOURCE_EXHAUSTED naming the limit and its flag, and happens before the request is
// even parsed, so it charges nothing and depends on nothing but the caller's own request times
// (docs/threat-model.md). The counts live in this process: with R replicas behind a balancer an
// analyst may reach R times the limits (docs/decisions.md says why that is the trade chosen).
#ifndef DPQ_SERVER_API_QUERY_ADMISSION_H_
#define DPQ_SERVER_API_QUERY_ADMISSION_H_

#include <cstdint>
#include <deque>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace dpq::api {

struct AdmissionLimits {
  int max_concurrent = 64;    // 0: unlimited
  int max_per_minute = 6000;  // 0: unlimited
};

class QueryAdmission {
 public:
  // Holds one admitted query's slot; releases it when destroyed.
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept : owner_(other.owner_), principal_(other.principal_) {
      other.owner_ = nullptr;
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();

   private:
    friend class QueryAdmission;
    Ticket(QueryAdmission* owner, int64_t principal) : owner_(owner), principal_(principal) {}
    QueryAdmission* owner_;
    int64_t principal_;
  };

  explicit QueryAdmission(AdmissionLimits limits) : limits_(limits) {}

  // A ticket, or RESOURCE_EXHAUSTED when `principal` is at either limit at `now`.
  absl::StatusOr<Ticket> Admit(int64_t principal, absl::Time now);

  // Queries of `principal` in flight (for tests).
  int InFlight(int64_t principal) const;

 private:
  struct State {
    int in_flight = 0;
    std::deque<absl::Time> admitted;  // admission times within the last minute, oldest first
  };
  void Release(int64_t principal);

  const AdmissionLimits limits_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, State> states_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_QUERY_ADMISSION_H_
