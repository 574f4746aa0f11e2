// The chokepoint command line: subcommands parsed here, each a function
// over the lower layers. cmd/chokepoint/main.cc only calls main().
#pragma once

namespace cp::app {

int main(int argc, char** argv);

}  // namespace cp::app
