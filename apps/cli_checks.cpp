#include "cli_checks.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cstdlib>

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

} // namespace

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
