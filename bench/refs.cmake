# bench_prepare: in-memory prepare figures of docs/decisions.md#benchmarks (projection + retention + serialization).
# bench_prepare_e2e: prepare end to end from a stored log (1, 10, 200 MB; raw and zstd).
# Included from bench/CMakeLists.txt.
add_executable(bench_prepare ${CMAKE_CURRENT_LIST_DIR}/prepare_bench.cpp)
target_link_libraries(bench_prepare PRIVATE acp_refs)
add_executable(bench_prepare_e2e ${CMAKE_CURRENT_LIST_DIR}/prepare_e2e_bench.cpp)
target_link_libraries(bench_prepare_e2e PRIVATE acp_refs acp_store)
