// dpqctl: the command-line client of dpq. Everything but the process boundary is in cli.cc.
#include <iostream>

#include "client/dpqctl/cli.h"

int main(int argc, char** argv) { return dpqctl::RunCli(argc, argv, std::cout, std::cerr); }
