// Corpus regression driver for the normal (non-libFuzzer) build: `fuzz_replay TARGET DIR...` feeds
// every file under the directories to that target's entry point once, as `TARGET -runs=0 DIR`
// would. Each target's LLVMFuzzerTestOneInput is renamed to dsh_fuzz_<target> at compile time so one
// executable holds them all (the machine has 2 cores: one link, not six).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int dsh_fuzz_protocol(const std::uint8_t*, std::size_t);
extern "C" int dsh_fuzz_refs(const std::uint8_t*, std::size_t);
extern "C" int dsh_fuzz_store(const std::uint8_t*, std::size_t);
extern "C" int dsh_fuzz_sse(const std::uint8_t*, std::size_t);
extern "C" int dsh_fuzz_config(const std::uint8_t*, std::size_t);
extern "C" int dsh_fuzz_image(const std::uint8_t*, std::size_t);

int main(int argc, char** argv) {
  using Entry = int (*)(const std::uint8_t*, std::size_t);
  const std::pair<const char*, Entry> targets[] = {
      {"protocol", dsh_fuzz_protocol}, {"refs", dsh_fuzz_refs}, {"store", dsh_fuzz_store},
      {"sse", dsh_fuzz_sse},           {"config", dsh_fuzz_config},     {"image", dsh_fuzz_image},
  };
  Entry entry = nullptr;
  for (const auto& [name, fn] : targets)
    if (argc > 1 && std::strcmp(argv[1], name) == 0) entry = fn;
  if (!entry || argc < 3) {
    std::fprintf(stderr, "usage: fuzz_replay protocol|refs|store|sse|config|image DIR...\n");
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (int i = 2; i < argc; ++i)
    for (const auto& e : std::filesystem::recursive_directory_iterator(argv[i]))
      if (e.is_regular_file()) files.push_back(e.path());
  if (files.empty()) {
    std::fprintf(stderr, "fuzz_replay: no corpus files\n");
    return 1;
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    entry(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("%s: %zu inputs ran\n", argv[1], files.size());
  return 0;
}
