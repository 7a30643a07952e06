"""grpc.health.v1.Health/Check without generated modules: the two messages are built from their
descriptor in a private pool, so the package neither shadows the `grpc` package (the proto's
package is grpc.health.v1) nor clashes with grpcio-health-checking if that is installed."""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

CHECK_METHOD = "/grpc.health.v1.Health/Check"
_FIELD = descriptor_pb2.FieldDescriptorProto


def _file_descriptor():
    """proto/grpc/health/v1/health.proto: HealthCheckRequest {string service = 1} and
    HealthCheckResponse {ServingStatus status = 1}."""
    f = descriptor_pb2.FileDescriptorProto(name="dpq/health_check.proto",
                                           package="grpc.health.v1", syntax="proto3")
    request = f.message_type.add(name="HealthCheckRequest")
    request.field.add(name="service", number=1, type=_FIELD.TYPE_STRING,
                      label=_FIELD.LABEL_OPTIONAL)
    response = f.message_type.add(name="HealthCheckResponse")
    status = response.enum_type.add(name="ServingStatus")
    for number, name in enumerate(("UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN")):
        status.value.add(name=name, number=number)
    response.field.add(name="status", number=1, type=_FIELD.TYPE_ENUM, label=_FIELD.LABEL_OPTIONAL,
                       type_name=".grpc.health.v1.HealthCheckResponse.ServingStatus")
    return f


def _message_classes():
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    classes = []
    for name in ("grpc.health.v1.HealthCheckRequest", "grpc.health.v1.HealthCheckResponse"):
        descriptor = pool.FindMessageTypeByName(name)
        if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.21
            classes.append(message_factory.GetMessageClass(descriptor))
        else:
            classes.append(message_factory.MessageFactory(pool).GetPrototype(descriptor))
    return classes


HealthCheckRequest, HealthCheckResponse = _message_classes()


def check_stub(channel):
    """The Check method on `channel`, callable like a generated stub method."""
    return channel.unary_unary(CHECK_METHOD,
                               request_serializer=HealthCheckRequest.SerializeToString,
                               response_deserializer=HealthCheckResponse.FromString)


def status_name(response):
    return HealthCheckResponse.DESCRIPTOR.enum_types_by_name["ServingStatus"].values_by_number[
        response.status].name
