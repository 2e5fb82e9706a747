# Writes cumulus-cli's man page from the program's own --help texts (run at build time:
#   cmake -DCLI=path/to/cumulus-cli -DOUT=cumulus-cli.1 -DVERSION=x.y.z -P man_page.cmake),
# so the page lists the same commands, options and method tables as the program.
execute_process(COMMAND ${CLI} --help OUTPUT_VARIABLE usage RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CLI} --help failed")
endif()
# The usage ends with the GPU of the machine that ran it: not the reader's.
string(REGEX REPLACE "\nGPU:[^\n]*\n?$" "\n" usage "${usage}")
string(REGEX MATCHALL "\n  [a-z]+ " lines "${usage}")
set(commands "")
foreach(l IN LISTS lines)
  string(STRIP "${l}" c)
  list(APPEND commands ${c})
endforeach()

function(roff_escape var text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

string(TIMESTAMP year "%Y")
roff_escape(usage_roff "${usage}")
set(page ".TH CUMULUS-CLI 1 \"${year}\" \"cumulus ${VERSION}\" \"User Commands\"
.SH NAME
cumulus-cli \\- point-cloud and depth-image algorithms on the GPU beside their CPU reference
.SH SYNOPSIS
.B cumulus-cli
\\fICOMMAND\\fR [\\fIARGS\\fR]
.br
.B cumulus-cli
\\fICOMMAND\\fR \\fB--help\\fR
.br
.B cumulus-cli --version
.SH DESCRIPTION
.nf
${usage_roff}.fi
.SH COMMANDS
")
foreach(c IN LISTS commands)
  execute_process(COMMAND ${CLI} ${c} --help OUTPUT_VARIABLE help)
  roff_escape(help_roff "${help}")
  string(APPEND page ".SS ${c}\n.nf\n${help_roff}.fi\n")
endforeach()
string(APPEND page ".SH SEE ALSO
.BR cumulus (1);
the README and docs/ of the source, and \\fBhelp(cumulus)\\fR in Python.
")
file(WRITE ${OUT} "${page}")
