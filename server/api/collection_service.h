// CollectionService (proto/dpq/v1/collection.proto): local-DP collections. Thin handlers:
// authenticate, proto -> domain, one call into collection/, domain -> proto, one ToGrpcStatus.
// Who may call what: CreateCollection admins only (logged in the admin log); everything else any
// valid token (docs/decisions.md, "Local-DP collections").
#ifndef DPQ_SERVER_API_COLLECTION_SERVICE_H_
#define DPQ_SERVER_API_COLLECTION_SERVICE_H_

#include "dpq/v1/collection.grpc.pb.h"
#include "server/api/auth.h"
#include "server/collection/collections.h"
#include "server/metrics/metrics.h"

namespace dpq::api {

struct CollectionServiceOptions {
  const engine::Authenticator* auth;
  collection::Collections* collections;
  metrics::Metrics* metrics;
};

class CollectionService final : public v1::CollectionService::Service {
 public:
  explicit CollectionService(CollectionServiceOptions options) : options_(options) {}

  grpc::Status CreateCollection(grpc::ServerContext* context,
                                const v1::CreateCollectionRequest* request,
                                v1::Collection* response) override;
  grpc::Status ListCollections(grpc::ServerContext* context,
                               const v1::ListCollectionsRequest* request,
                               v1::ListCollectionsResponse* response) override;
  grpc::Status GetCollection(grpc::ServerContext* context, const v1::GetCollectionRequest* request,
                             v1::Collection* response) override;
  grpc::Status SubmitReport(grpc::ServerContext* context, const v1::SubmitReportRequest* request,
                            v1::SubmitReportResponse* response) override;
  grpc::Status Estimate(grpc::ServerContext* context, const v1::EstimateRequest* request,
                        v1::EstimateResponse* response) override;

 private:
  CollectionServiceOptions options_;
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_COLLECTION_SERVICE_H_
