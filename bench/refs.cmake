# bench_prepare: in-memory prepare figures of contracts.md §6 (projection + retention + serialization).
# Included from bench/CMakeLists.txt.
add_executable(bench_prepare ${CMAKE_CURRENT_LIST_DIR}/prepare_bench.cpp)
target_link_libraries(bench_prepare PRIVATE acp_refs)
