#include "server/base/logging.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dpq {
namespace {

constexpr char kTime[] = "2026-12-02T10:00:00.000Z";

TEST(LoggingTest, JsonLineIsOneObjectWithTimeLevelMsgAndTypedFields) {
  const std::string line = FormatLogLine(
      LogFormat::kJson, LogLevel::kInfo, "rpc",
      {{"rpc", "dpq.v1.AnalystService/Query"}, {"status", "OK"}, {"duration_ms", 3.25}}, kTime);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["time"], kTime);
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["msg"], "rpc");
  EXPECT_EQ(j["status"], "OK");
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 3.25);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(LoggingTest, HostileFieldValuesStayInsideTheirJsonString) {
  // A client's dataset name with a quote, a newline, a NUL and bytes that are not UTF-8.
  const std::string hostile = std::string("a\"b\nc\0d\xff\xfe", 9);
  const std::string line =
      FormatLogLine(LogFormat::kJson, LogLevel::kWarning, "m", {{"dataset", hostile}}, kTime);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j.size(), 4u) << "no field was injected";
  EXPECT_EQ(j["dataset"].get<std::string>().substr(0, 7), std::string("a\"b\nc\0d", 7));
}

TEST(LoggingTest, TextLineQuotesValuesThatWouldBreakIt) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, LogLevel::kInfo, "rpc",
                          {{"analyst", "alice"}, {"dataset", "x y\n"}}, kTime),
            "2026-12-02T10:00:00.000Z INFO rpc analyst=alice dataset=\"x y\\n\"");
}

TEST(LoggingTest, LevelsAndFormatsParseAndOthersAreRefused) {
  EXPECT_EQ(*ParseLogLevel("DEBUG"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("warn"), LogLevel::kWarning);
  EXPECT_FALSE(ParseLogLevel("verbose").ok());
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_TRUE(ParseLogFormat("auto").ok());
  EXPECT_FALSE(ParseLogFormat("xml").ok());
}

TEST(LoggingTest, EventsBelowTheConfiguredLevelAreDropped) {
  ConfigureLogging(LogFormat::kText, LogLevel::kWarning);
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  ConfigureLogging(LogFormat::kText, LogLevel::kInfo);
}

}  // namespace
}  // namespace dpq
