// lenscheck: verification and mutation-test harness for attention-analysis numerics. Each subcommand
// lives in its own file (cli/commands.h); main parses, runs the one given, and maps errors to exit codes.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <new>
#include <vector>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "common/report_file.h"
#include "model/error.h"
#include "oracle/oracle.h"

namespace lc = lenscheck;
using namespace lenscheck::cli;

int main(int argc, char** argv) {
  CLI::App app{"lenscheck: verify attention-analysis numerics against a libtorch oracle"};
  app.require_subcommand(1);
  app.fallthrough();  // --threads may follow the subcommand too
  unsigned threads = 0;
  app.add_option("--threads", threads, "sentences (and mutants) in parallel; 0: one per core; cores left over "
                                       "(trace: one sentence) share the runtime's forward. Results do not "
                                       "depend on it")->capture_default_str();
  app.set_version_flag("--version", lc::build_version());

  const DataPaths data = locate_data();
  const Shared shared{data, threads};
  const std::vector<Command> commands = {
      add_verify(app, shared),    add_trace(app, shared),       add_export_onnx(app, shared),
      add_audit(app, shared),     add_audit_merge(app, shared), add_mutate(app, shared),
      add_make_corpus(app, shared), add_calibrate(app, shared), add_inspect(app, shared),
      add_make_fixture(app, shared)};

  try {
    const Arguments arguments(argc, argv);
    app.parse(arguments.argc(), arguments.argv());
    // Our pool runs the sentences; libtorch's own threads would only compete with it.
    lc::oracle::Oracle::set_threads(1);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kPass : kBadInput;
  }

  try {
    for (const Command& c : commands)
      if (*c.subcommand) return c.run();
  } catch (const lc::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadInput;
  } catch (const lc::NonFiniteError& e) {
    fmt::print(stderr, "gate failure: {}\n", e.what());
    return kFail;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "error: out of memory (the model, or the oracles that judge it, do not fit)\n");
    return kBadInput;
  }
  return kBadInput;
}
