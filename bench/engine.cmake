# bench_compaction: the compaction figure of docs/decisions.md#benchmarks (a 10,000-message session condensed on
# the echo model, model time excluded). Included from bench/CMakeLists.txt.
add_executable(bench_compaction ${CMAKE_CURRENT_LIST_DIR}/compaction_bench.cpp)
# acp_llm_openssl_loader: OpenSSL's functions as dsh-acp has them, for the engine's MCP servers over https.
target_link_libraries(bench_compaction PRIVATE acp_handlers acp_engine acp_llm_openssl_loader)
# bench_command: a local `bash -c true` tool call with the Landlock sandbox and without (issue 27).
add_executable(bench_command ${CMAKE_CURRENT_LIST_DIR}/command_bench.cpp)
target_link_libraries(bench_command PRIVATE acp_tools)

# bench_tool_read: issue 27's `read` figure (a tool call on a 4 KiB file, paths opened beneath the
# root's descriptor, beside resolution by name).
add_executable(bench_tool_read ${CMAKE_CURRENT_LIST_DIR}/tool_read_bench.cpp)
target_link_libraries(bench_tool_read PRIVATE acp_engine acp_llm_openssl_loader)
