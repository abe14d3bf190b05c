# cuplug_add_plugin(<target> SOURCES <files...> [LIBRARIES <libs...>] [OUTPUT_DIRECTORY <dir>]
#                   [INSTALL_DESTINATION <dir>])
# Builds a loadable cuplug plugin: a MODULE library with hidden visibility, linked to the core,
# whose runpath finds the core in the package's lib/ folder beside its plugins/ folder (build tree,
# wheel), or next to or above it (CMake install: <prefix>/lib/cuplug/plugins). CUPLUG_PLUGIN_VERSION is defined as the
# calling project's version (when it has one), for the version argument of CUPLUG_PLUGIN(...).
function(cuplug_add_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY;INSTALL_DESTINATION" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE cuplug::core ${ARG_LIBRARIES})
  if(PROJECT_VERSION)
    target_compile_definitions(${target} PRIVATE CUPLUG_PLUGIN_VERSION="${PROJECT_VERSION}")
  endif()
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    PREFIX "lib"
    BUILD_RPATH "$ORIGIN/../lib;$ORIGIN/..;$ORIGIN/../.."
    INSTALL_RPATH "$ORIGIN/../lib;$ORIGIN/..;$ORIGIN/../..")
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  endif()
  if(ARG_INSTALL_DESTINATION)
    install(TARGETS ${target} LIBRARY DESTINATION "${ARG_INSTALL_DESTINATION}")
  endif()
endfunction()
