# Writes OUT: a C++ file defining `const std::string_view VAR` with IN's bytes.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," body "${hex}")
math(EXPR len "${n} / 2")
file(WRITE ${OUT} "#include <string_view>\nnamespace cp::embedded {\nstatic const char data_[] = {${body} 0};\nextern const std::string_view ${VAR};\nconst std::string_view ${VAR}(data_, ${len});\n}\n")
