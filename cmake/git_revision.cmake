# Writes OUT, a C++ source defining pola::app::git_revision(): the commit the
# binaries are built from, "-dirty" when the tree had uncommitted changes, or
# "unknown" outside a git checkout. Run as a script (cmake -P) by the
# pola_git_revision target at every build, not at configure time, so a commit
# made after configuring is what `pola --version` and benchmark JSON name. The
# file is rewritten only when the text changes, so an unchanged revision
# recompiles nothing.
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT revision)
  set(revision unknown)
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE dirty
                  OUTPUT_QUIET ERROR_QUIET)
  if(dirty EQUAL 1)
    string(APPEND revision "-dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/git_revision.cmake.\n#include \"apps/git_revision.h\"\n\nconst char *pola::app::git_revision() { return \"${revision}\"; }\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
