#include "server/daemon/startup_files.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::daemon {
namespace {

using ::testing::HasSubstr;

std::string WriteTempFile(const std::string& contents) {
  char path[] = "/tmp/startup_files_test_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << contents;
  return path;
}

TEST(ServerCredentialsFromFilesTest, NoFilesMeanPlaintext) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFromFiles({});
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_NE(*credentials, nullptr);
}

TEST(ServerCredentialsFromFilesTest, ACertificateAndAKeyGoTogether) {
  for (const TlsFiles& files : {TlsFiles{"cert.pem", "", ""}, TlsFiles{"", "key.pem", ""}}) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
        ServerCredentialsFromFiles(files);
    EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(credentials.status().message(), HasSubstr("--tls-cert and --tls-key go together"));
  }
}

TEST(ServerCredentialsFromFilesTest, AClientCaNeedsACertificateAndAKey) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFromFiles({"", "", "ca.pem"});
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials.status().message(), HasSubstr("--tls-client-ca needs"));
}

TEST(ServerCredentialsFromFilesTest, AnUnreadableFileIsNotFound) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFromFiles({"/nonexistent/cert.pem", "/nonexistent/key.pem", ""});
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(credentials.status().message(), HasSubstr("/nonexistent/cert.pem"));
}

TEST(BootstrapAdminTokenTest, NeitherFileNorEnvironmentMeansNoToken) {
  absl::StatusOr<std::string> token = BootstrapAdminToken("", "");
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "");
}

TEST(BootstrapAdminTokenTest, TheFileWinsOverTheEnvironmentAndIsTrimmed) {
  const std::string path = WriteTempFile("  file-token-0123456789\n");
  absl::StatusOr<std::string> token = BootstrapAdminToken(path, "env-token-0123456789");
  std::remove(path.c_str());
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "file-token-0123456789");
  token = BootstrapAdminToken("", " env-token-0123456789 ");
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "env-token-0123456789");
}

TEST(BootstrapAdminTokenTest, AShortTokenIsRefusedAndAMissingFileIsNotFound) {
  absl::StatusOr<std::string> token = BootstrapAdminToken("", "fifteen-chars-x");
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), HasSubstr("at least 16 characters"));
  EXPECT_TRUE(BootstrapAdminToken("", "sixteen-chars-xy").ok());
  EXPECT_EQ(BootstrapAdminToken("/nonexistent/token", "env-token-0123456789").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dpq::daemon
