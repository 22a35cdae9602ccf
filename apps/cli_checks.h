// Checks of the command line made before CLI11 parses it, for the messages a
// new user needs: an unknown subcommand or option names itself and the
// nearest known one ("did you mean"), and a number option given a word says
// that it is not a number (CLI11 alone reports "--model is required" for a
// misspelt --model, and a range error for --threads abc). Also what CLI11
// itself refuses, reworded (parse_error_message), and the validators the
// commands use so that out-of-range values are refused in plain words.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace pola::app {

// The first problem found in argv, as a one-line message without the
// "pola: error:" prefix, or "" when CLI11 may parse it. `root` must have all
// subcommands and options registered.
std::string check_arguments(const CLI::App &root, int argc, const char *const *argv);

// The candidate closest to `word` by edit distance, or "" when none is close
// enough to be a plausible typo.
std::string nearest_name(const std::string &word, const std::vector<std::string> &candidates);

// A CLI11 parse error (a missing required option, a value a validator refused,
// an unexpected argument) as a one-line message without the "pola: error:"
// prefix: it names the (sub)command of argv and its --help, and rewords
// CLI11's texts that read as internals ("1 required TEXT missing").
std::string parse_error_message(const CLI::App &root, int argc, const char *const *argv, const std::string &what);

// Validators whose refusals read as sentences ("--limit: must be at least 0,
// not -1"): CLI11's own print their bounds as doubles (a 300-digit number for
// "no upper bound") or "Check X value in {...} OR {...} FAILED".
CLI::Validator whole_number_in(long long lowest, long long highest);
CLI::Validator whole_number_at_least(long long lowest);
// A finite decimal number in [lowest, highest].
CLI::Validator number_in(double lowest, double highest);
// The value must be one of `names`, spelt exactly.
CLI::Validator one_of(const std::vector<std::string> &names);

} // namespace pola::app
