# bench_provider: relay latency and throughput of the OpenAI-compatible provider against a loopback server.
# Included from bench/CMakeLists.txt. Reuses the scripted server of tests/llm (one source, two users).
add_executable(bench_provider
  ${CMAKE_CURRENT_LIST_DIR}/provider_bench.cpp
  ${PROJECT_SOURCE_DIR}/tests/llm/scripted_server.cpp
)
target_include_directories(bench_provider PRIVATE ${PROJECT_SOURCE_DIR}/tests/llm)
target_link_libraries(bench_provider PRIVATE acp_llm_openai OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
