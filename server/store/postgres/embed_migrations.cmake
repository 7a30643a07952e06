# Writes a C++ source defining dpq::store::EmbeddedMigrations() from the *.sql files of DIR, so that
# dpqd carries its migrations and runs from any directory. Run at build time:
#   cmake -DDIR=<migrations dir> -DOUT=<file.cc> -P embed_migrations.cmake
# The output is rewritten only when its content changes (no needless rebuilds).
file(GLOB names RELATIVE "${DIR}" "${DIR}/*.sql")
list(SORT names)
set(entries "")
foreach(name IN LISTS names)
  file(READ "${DIR}/${name}" sql)
  if(sql MATCHES "\\)dpq_migration\"")
    message(FATAL_ERROR "${name} contains the raw-string delimiter )dpq_migration\"")
  endif()
  string(SUBSTRING "${name}" 0 4 digits)
  string(REGEX REPLACE "^0+" "" version "${digits}")
  if(NOT version MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${name}: migrations are named NNNN_verb_noun.sql")
  endif()
  string(APPEND entries "      {${version}, \"${name}\", R\"dpq_migration(${sql})dpq_migration\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from migrations/ by embed_migrations.cmake; do not edit.
#include \"server/store/postgres/migrator.h\"

namespace dpq::store {

const std::vector<Migration>& EmbeddedMigrations() {
  static const std::vector<Migration>* const kMigrations = new std::vector<Migration>{
${entries}  };
  return *kMigrations;
}

}  // namespace dpq::store
")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
