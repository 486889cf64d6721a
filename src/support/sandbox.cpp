#include "support/sandbox.hpp"
#include "support/unique_fd.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace acp::support {

namespace {

// The kernel's ABI, spelled out here so that an older <linux/landlock.h> does not decide which
// rights we can ask for.
constexpr std::uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;
constexpr std::uint64_t kWriteFile = 1ull << 1, kRemoveDir = 1ull << 4, kRemoveFile = 1ull << 5,
                        kMakeChar = 1ull << 6, kMakeDir = 1ull << 7, kMakeReg = 1ull << 8, kMakeSock = 1ull << 9,
                        kMakeFifo = 1ull << 10, kMakeBlock = 1ull << 11, kMakeSym = 1ull << 12, kRefer = 1ull << 13,
                        kTruncate = 1ull << 14;

struct RulesetAttr {
  std::uint64_t handled_access_fs;
};
struct [[gnu::packed]] PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

struct Support {
  int abi = 0;
  std::string missing;  ///< why not
};

const Support& support() {
  static const Support s = [] {
    Support out;
    long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
    if (abi < 0) {
      out.missing = errno == ENOSYS ? "the kernel has no Landlock (ENOSYS)"
                    : errno == EOPNOTSUPP ? "Landlock is disabled in this kernel (EOPNOTSUPP)"
                                          : std::string("Landlock is unavailable: ") + std::strerror(errno);
    } else if (abi < 2) {
      // ABI 1 refuses every rename and link across directories, which breaks `mv` in the project.
      out.missing = "the kernel's Landlock is ABI 1 (Linux < 5.19), which cannot allow renames across directories";
    } else {
      out.abi = static_cast<int>(abi);
    }
    return out;
  }();
  return s;
}

// Everything that changes the file system, as far as this kernel's Landlock can tell.
std::uint64_t handled_rights(int abi) {
  std::uint64_t rights = kWriteFile | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir | kMakeReg | kMakeSock |
                         kMakeFifo | kMakeBlock | kMakeSym | kRefer;
  if (abi >= 3) rights |= kTruncate;
  return rights;
}

// The rights that apply to a file that is not a directory (others make the rule EINVAL).
constexpr std::uint64_t kFileRights = kWriteFile | kTruncate;

void allow(int ruleset, const std::string& path, std::uint64_t handled) {
  const UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) return;  // absent here: nothing to allow
  struct stat st;
  PathBeneathAttr rule{handled, fd.get()};
  if (::fstat(fd.get(), &st) == 0 && !S_ISDIR(st.st_mode)) rule.allowed_access = handled & kFileRights;
  if (::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0) != 0) {
    const int e = errno;  // before the message's allocation
    throw std::system_error(e, std::generic_category(), "Landlock rule for " + path);
  }
}

} // namespace

const char* sandbox_name() { return support().abi ? "landlock" : "none"; }

const std::string& sandbox_missing_reason() { return support().missing; }

std::vector<std::string> temporary_directories() {
  std::vector<std::string> dirs{"/tmp", "/var/tmp", "/dev/shm"};
  if (const char* t = std::getenv("TMPDIR"); t && *t == '/') dirs.emplace_back(t);
  return dirs;
}

int write_confinement(const std::vector<std::string>& writable) {
  const int abi = support().abi;
  if (!abi) return -1;
  RulesetAttr attr{handled_rights(abi)};
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (!ruleset) throw std::system_error(errno, std::generic_category(), "Landlock ruleset");
  for (const auto& dir : writable) allow(ruleset.get(), dir, attr.handled_access_fs);
  // Devices programs write as a matter of course; a terminal for those that open one.
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
                          "/dev/ptmx", "/dev/pts"})
    allow(ruleset.get(), dev, attr.handled_access_fs);
  return ruleset.release();
}

} // namespace acp::support
