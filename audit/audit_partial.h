#pragma once
// A shard's partial audit as a file: `lenscheck audit --shard K/N --partial OUT` writes it and
// `lenscheck audit-merge` reads it back. JSON, bit for bit: doubles round-trip exactly.
#include <filesystem>

#include "audit/audit.h"

namespace lenscheck {

// Writes to a temporary name beside `out` and renames it at the end, so that a shard killed on the
// way leaves no partial, and a rerun replaces the one before.
void write_partial(const AuditPartial& partial, const std::filesystem::path& out);

// Throws InputError naming the file when it is not a partial of `plan`'s shape.
AuditPartial read_partial(const StudyPlan& plan, const std::filesystem::path& file);

}  // namespace lenscheck
