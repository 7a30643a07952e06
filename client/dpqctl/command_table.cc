#include "client/dpqctl/command_table.h"

#include <cmath>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"

namespace dpqctl {

void CommandLine::RunWhenParsed(CLI::App* command, CommandRun command_run) {
  command->callback([this, command_run = std::move(command_run)] { run = command_run; });
}

const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
      double value = 0;
      if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value)) {
        return "'" + text + "' is not a finite number";
      }
      return "";
    },
    "FINITE");

}  // namespace dpqctl
