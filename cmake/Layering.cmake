# Include layering, enforced by the compiler.
#
# Headers are included as "store/…", "refs/…", "protocol/…", "handlers/…". No library exports src/
# or the project root: each exports an include root of its own in the build tree that holds only its
# folder, as a symlink named like the folder (build/include/acp_store/store -> src/store). A target
# therefore sees "x/…" only when it links the library of x, directly or through a library that links
# it PUBLIC, and any other `#include "x/…"` fails to compile ("No such file or directory"). Which
# folder may include which follows from target_link_libraries:
#
#   folder          library          sees
#   protocol        acp_protocol     protocol support
#   src/support     acp_support      support
#   src/store       acp_store        store support
#   src/refs        acp_refs         refs store support
#   src/net         acp_net          net
#   src/llm         acp_llm          llm support
#   src/llm/openai  acp_llm_openai   llm llm/openai net support
#   src/transport   acp_transport    transport protocol support
#   src/tools       acp_tools        tools support
#   src/mcp         acp_mcp          mcp transport protocol net support
#   src/engine      acp_engine       engine store refs llm tools mcp support
#   handlers        acp_handlers     handlers engine protocol support store refs llm
#   src/server      acp_server       server handlers engine protocol transport support store refs llm llm/openai net
#
# The layering.* tests compile forbidden includes with a library's include directories and expect
# the compiler to refuse them.

# dsh_include_root(<target> <folder> [EXCLUDE <subfolder>...])
# Makes <folder> (relative to the project root) includable as "<name>/…" by <target> and by whatever
# links it, where <name> is the folder without a leading src/. A subfolder that is a library of its
# own (src/llm/openai) is EXCLUDEd: the root then holds a directory of per-entry symlinks instead of
# one symlink to the folder, so "llm/openai/…" resolves only through acp_llm_openai's root.
function(dsh_include_root target folder)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "EXCLUDE")
  string(REGEX REPLACE "^src/" "" name "${folder}")
  set(root ${PROJECT_BINARY_DIR}/include/${target})
  set(link ${root}/${name})
  get_filename_component(parent ${link} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(NOT arg_EXCLUDE)
    if(IS_DIRECTORY ${link} AND NOT IS_SYMLINK ${link})
      file(REMOVE_RECURSE ${link})
    endif()
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${link} SYMBOLIC)
  else()
    if(IS_SYMLINK ${link})
      file(REMOVE ${link})
    endif()
    file(REMOVE_RECURSE ${link})
    file(MAKE_DIRECTORY ${link})
    # Re-globbed at build time, so a new header is linked without configuring by hand.
    file(GLOB entries CONFIGURE_DEPENDS LIST_DIRECTORIES true RELATIVE ${PROJECT_SOURCE_DIR}/${folder}
         ${PROJECT_SOURCE_DIR}/${folder}/*)
    foreach(entry IN LISTS entries)
      if(NOT entry IN_LIST arg_EXCLUDE AND NOT entry STREQUAL "CMakeLists.txt")
        file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder}/${entry} ${link}/${entry} SYMBOLIC)
      endif()
    endforeach()
  endif()
  target_include_directories(${target} PUBLIC ${root})
endfunction()

# dsh_add_layering_test(<name> <library> <root/header>)
# CTest layering.<name>: preprocessing `#include "<root/header>"` with <library>'s include directories
# must fail because the header is not found, while a header of the library's own root (the control,
# so a broken command line cannot pass) preprocesses. Preprocessing only: a fraction of a second.
function(dsh_add_layering_test name library header own_header)
  set(dir ${PROJECT_BINARY_DIR}/layering)
  file(WRITE ${dir}/${name}.violation.cpp "#include \"${header}\"\n")
  file(WRITE ${dir}/${name}.control.cpp "#include \"${own_header}\"\n")
  set(includes "$<TARGET_PROPERTY:${library},INCLUDE_DIRECTORIES>")
  add_test(NAME layering.${name}
           COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} "-DINCLUDES=$<JOIN:${includes},|>"
                   -DVIOLATION=${dir}/${name}.violation.cpp -DHEADER=${header}
                   -DCONTROL=${dir}/${name}.control.cpp -P ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake)
  set_tests_properties(layering.${name} PROPERTIES TIMEOUT 60 LABELS layering)
endfunction()
