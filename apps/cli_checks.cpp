#include "cli_checks.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>

namespace pola::app {
namespace {

size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

bool is_number_like(const std::string &s) {  // "-3", "-0.5": values, not options
  return s.size() > 1 && s[0] == '-' && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
}

std::string quote(const std::string &s) { return "'" + s + "'"; }

// Every spelling of every option of `app` ("--model", "-m"), for suggestions.
std::vector<std::string> option_spellings(const CLI::App &app) {
  std::vector<std::string> names;
  for (const CLI::Option *o : app.get_options()) {
    for (const auto &l : o->get_lnames()) names.push_back("--" + l);
    for (const auto &s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// A value CLI11 will convert to the option's type; "" when it will.
std::string check_value(const CLI::Option &opt, const std::string &name, const std::string &value) {
  const std::string type = opt.get_type_name();
  const bool integer = type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0;
  const bool real = type.rfind("FLOAT", 0) == 0 || type.rfind("NUMBER", 0) == 0;
  if (!integer && !real) return "";
  char *end = nullptr;
  errno = 0;
  if (integer) {
    (void)std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') return name + ": " + quote(value) + " is not a whole number";
  } else {
    (void)std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') return name + ": " + quote(value) + " is not a number";
  }
  if (errno == ERANGE) return name + ": " + quote(value) + " is out of range";
  return "";
}

std::string unknown_option(const CLI::App &app, const std::string &command, const std::string &name) {
  std::string msg = (command == "pola" ? "" : command + ": ") + "unknown option " + quote(name);
  const std::string near = nearest_name(name, option_spellings(app));
  if (!near.empty()) msg += "; did you mean " + quote(near) + "?";
  return msg + " (see " + command + " --help)";
}

// The options of one (sub)command, from argv[first] on. Values of options
// that take one are checked against the option's type and skipped.
std::string check_options(const CLI::App &app, const std::string &command, int first, int argc,
                          const char *const *argv) {
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // everything after is positional
    if (arg.size() < 2 || arg[0] != '-' || is_number_like(arg)) continue;
    std::string name = arg, value;
    bool inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      const auto eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inline_value = true;
      }
    } else if (arg.size() > 2) {  // -t4 or -vj: the first letter names the option
      name = arg.substr(0, 2);
    }
    const CLI::Option *opt = app.get_option_no_throw(name);
    if (opt == nullptr) return unknown_option(app, command, name);
    if (opt->get_items_expected_max() == 0) continue;  // a flag
    if (!inline_value && name.size() == 2 && arg.size() > 2) {
      value = arg.substr(2);
      inline_value = true;
    }
    if (!inline_value) {
      if (i + 1 >= argc) return "";  // CLI11 says the value is missing
      value = argv[++i];
    }
    const std::string bad = check_value(*opt, name, value);
    if (!bad.empty()) return command + ": " + bad;
  }
  return "";
}

// "pola classify" for argv naming the classify command, "pola" when it names none.
std::string command_of(const CLI::App &root, int argc, const char *const *argv) {
  const auto subs = root.get_subcommands([](const CLI::App *) { return true; });
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') continue;
    for (const CLI::App *s : subs)
      if (s->check_name(arg)) return "pola " + s->get_name();
    break;
  }
  return "pola";
}

// "'a', 'b'" from CLI11's space-separated list of unexpected arguments, in
// the order argv gives them (CLI11 lists them in another).
std::string quoted_words(const std::string &words, int argc, const char *const *argv) {
  std::vector<std::string> list;
  std::string word;
  for (size_t i = 0; i <= words.size(); ++i) {
    if (i == words.size() || words[i] == ' ') {
      if (!word.empty()) list.push_back(word);
      word.clear();
    } else {
      word += words[i];
    }
  }
  auto position = [&](const std::string &w) {
    for (int i = 1; i < argc; ++i)
      if (w == argv[i]) return i;
    return argc;
  };
  std::stable_sort(list.begin(), list.end(),
                   [&](const std::string &a, const std::string &b) { return position(a) < position(b); });
  std::string out;
  for (const auto &w : list) out += (out.empty() ? "" : ", ") + quote(w);
  return out;
}

bool parse_whole(const std::string &text, long long &value) {
  char *end = nullptr;
  errno = 0;
  value = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0' && errno != ERANGE;
}

// A finite decimal number (strtod also reads "nan" and "inf": refused).
bool parse_finite(const std::string &text, double &value) {
  char *end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && errno != ERANGE && std::isfinite(value);
}

} // namespace

std::string parse_error_message(const CLI::App &root, int argc, const char *const *argv, const std::string &what) {
  const std::string command = command_of(root, argc, argv);
  std::string message = what;
  std::smatch m;
  static const std::regex missing_value(R"(^(\S+): \d+ required \S+ missing$)");
  static const std::regex extras(R"(^The following arguments? (?:was|were) not expected: (.*)$)");
  if (std::regex_match(what, m, missing_value)) {
    message = m[1].str() + " needs a value";
  } else if (std::regex_match(what, m, extras)) {
    const std::string words = quoted_words(m[1].str(), argc, argv);
    message = (words.find(',') == std::string::npos ? "unexpected argument " : "unexpected arguments ") + words;
  } else if (what == "A subcommand is required") {
    return "a command is required (pola --help lists the commands)";
  }
  return command + ": " + message + " (see " + command + " --help)";
}

CLI::Validator whole_number_in(long long lowest, long long highest) {
  const std::string range = std::to_string(lowest) + ".." + std::to_string(highest);
  return CLI::Validator(
      [lowest, highest, range](std::string &text) -> std::string {
        long long v = 0;
        if (!parse_whole(text, v)) return quote(text) + " is not a whole number";
        if (v < lowest || v > highest) return "must be in " + range + ", not " + text;
        return "";
      },
      "in " + range);
}

CLI::Validator number_in(double lowest, double highest) {
  const std::string range = CLI::detail::to_string(lowest) + ".." + CLI::detail::to_string(highest);
  return CLI::Validator(
      [lowest, highest, range](std::string &text) -> std::string {
        double v = 0;
        if (!parse_finite(text, v)) return quote(text) + " is not a number";
        if (v < lowest || v > highest) return "must be in " + range + ", not " + text;
        return "";
      },
      "in " + range);
}

CLI::Validator whole_number_at_least(long long lowest) {
  return CLI::Validator(
      [lowest](std::string &text) -> std::string {
        long long v = 0;
        if (!parse_whole(text, v)) return quote(text) + " is not a whole number";
        if (v < lowest) return "must be at least " + std::to_string(lowest) + ", not " + text;
        return "";
      },
      ">= " + std::to_string(lowest));
}

CLI::Validator one_of(const std::vector<std::string> &names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return CLI::Validator(
      [names, list](std::string &text) -> std::string {
        if (std::find(names.begin(), names.end(), text) != names.end()) return "";
        return quote(text) + " is not one of the choices: give " + list;
      },
      "");
}

std::string nearest_name(const std::string &word, const std::vector<std::string> &candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const auto &c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  // A typo changes a few letters; anything further is another word.
  const size_t allowed = std::max<size_t>(2, word.size() / 3);
  return best_distance <= allowed ? best : "";
}

std::string check_arguments(const CLI::App &root, int argc, const char *const *argv) {
  const auto subs = root.get_subcommands([](const CLI::App *) { return true; });
  std::vector<std::string> commands;
  for (const CLI::App *sub : subs) commands.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') {
      if (root.get_option_no_throw(arg.substr(0, arg.find('='))) == nullptr)
        return unknown_option(root, "pola", arg.substr(0, arg.find('=')));
      continue;
    }
    const auto sub = std::find_if(subs.begin(), subs.end(), [&](const CLI::App *s) { return s->check_name(arg); });
    if (sub == subs.end()) {
      std::string msg = "unknown command " + quote(arg);
      const std::string near = nearest_name(arg, commands);
      if (!near.empty()) msg += "; did you mean " + quote(near) + "?";
      return msg + " (pola --help lists the commands)";
    }
    return check_options(**sub, "pola " + arg, i + 1, argc, argv);
  }
  return "";
}

} // namespace pola::app
