#pragma once
// The subcommands of lenscheck, one file each: every adder registers its subcommand and its own
// options on the app and returns what runs it once the command line is parsed.
#include <CLI/CLI.hpp>

#include <functional>

#include "cli/data_paths.h"

namespace lenscheck::cli {

// Exit codes: 0 pass (audit: PROCEED), 1 the gate failed (audit: recorded numbers moved), 2 bad input
// (the message names the file and the problem), 3 audit verdict ABANDON.
constexpr int kPass = 0, kFail = 1, kBadInput = 2, kAbandon = 3;

// What every subcommand may read: the default data, and the global --threads (read when it runs).
struct Shared {
  const DataPaths& data;
  const unsigned& threads;
};

struct Command {
  CLI::App* subcommand;
  std::function<int()> run;  // may throw InputError (exit 2) or NonFiniteError (exit 1)
};

Command add_verify(CLI::App& app, const Shared& shared);
Command add_trace(CLI::App& app, const Shared& shared);
Command add_export_onnx(CLI::App& app, const Shared& shared);
Command add_audit(CLI::App& app, const Shared& shared);
Command add_audit_merge(CLI::App& app, const Shared& shared);
Command add_mutate(CLI::App& app, const Shared& shared);
Command add_make_corpus(CLI::App& app, const Shared& shared);
Command add_calibrate(CLI::App& app, const Shared& shared);
Command add_inspect(CLI::App& app, const Shared& shared);
Command add_make_fixture(CLI::App& app, const Shared& shared);

}  // namespace lenscheck::cli
