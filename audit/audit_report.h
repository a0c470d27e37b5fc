#pragma once
// What `lenscheck audit` writes into its folder: audit.md, audit.json and sink-shares.svg.
#include <filesystem>
#include <string>

#include "audit/audit.h"

namespace lenscheck {

// The short human-readable conclusion, generated from the numbers alone.
std::string audit_conclusion(const AuditResult& result);
void write_audit_reports(const AuditResult& result, const std::filesystem::path& dir);
// The criteria, moved recorded numbers, conclusion and verdict on stdout, after the reports.
void print_audit_outcome(const AuditResult& result, const std::filesystem::path& dir);

}  // namespace lenscheck
