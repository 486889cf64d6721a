# Include layering, enforced at build time.
#
# Headers are included relative to two shared roots ("protocol/…", "handlers/…" from the project
# root; "store/…", "refs/…" … from src/), so a per-library include root cannot make a forbidden
# include fail to compile without moving every header. Instead each folder declares the include
# roots it may use; the `layering` target (part of ALL) fails the build on any other `#include "x/…"`
# and when a library does not link the library of a root it includes.
#
#   folder          library          may include
set(DSH_LAYERS
  "protocol         acp_protocol     protocol support"
  "src/support      acp_support      support"
  "src/store        acp_store        store support"
  "src/refs         acp_refs         refs store support"
  "src/llm          acp_llm          llm support"
  "src/llm/openai   acp_llm_openai   llm support"
  "src/transport    acp_transport    transport support"
  "src/engine       acp_engine       engine store refs llm support"
  "handlers         acp_handlers     handlers engine protocol support store refs llm"
  "src/server       acp_server       server handlers engine protocol transport support store refs llm"
)

# One build step checks both rules on every source change: each `#include "root/…"` names a root the
# folder may include, and the folder's library links acp_<root> directly for every other root it
# includes. Folders are not searched recursively: a subfolder (src/llm/openai) is a library of its
# own with its own line. A folder without sources yet (src/engine while it is written) passes.
function(dsh_add_layering_check)
  set(args)
  set(all_sources)
  foreach(layer IN LISTS DSH_LAYERS)
    string(REGEX REPLACE " +" ";" layer "${layer}")
    list(POP_FRONT layer folder target)
    string(REPLACE ";" "," allowed "${layer}")
    set(links "$<$<TARGET_EXISTS:${target}>:$<JOIN:$<TARGET_PROPERTY:${target},LINK_LIBRARIES>,,>>")
    list(APPEND args "${folder}=${target}=${allowed}=${links}")
    file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cpp ${PROJECT_SOURCE_DIR}/${folder}/*.hpp)
    list(APPEND all_sources ${sources})
  endforeach()
  string(REPLACE ";" "|" args "${args}")
  set(stamp ${PROJECT_BINARY_DIR}/layering.stamp)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -D ROOT=${PROJECT_SOURCE_DIR} "-DLAYERS=${args}" -D STAMP=${stamp}
            -P ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake
    DEPENDS ${all_sources} ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake ${PROJECT_SOURCE_DIR}/cmake/Layering.cmake
    COMMENT "checking include layering"
    VERBATIM)
  add_custom_target(layering ALL DEPENDS ${stamp})
endfunction()
