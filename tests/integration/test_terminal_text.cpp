// Text that reaches a terminal from untrusted places — a process name, an argument a user
// typed — is escaped: no escape sequence runs, no name renders reversed; and it is measured as
// the terminal draws it, so no line overflows the terminal's width.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "support.h"

namespace gpureap::testing {
namespace {

bool raw_control(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  return false;
}

TEST(TerminalText, ArgumentsEchoedInErrorsAreEscaped) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"kill", "--user", "\x1b]0;owned\x07", "--dry-run", "--nvml-library", kNoNvml},
           {"doctor", "--settle", "\x1b[2J", "--nvml-library", kNoNvml},
           {"ps", "--proc-root", "/nonexistent/\x1b[31m"},
           {"kill", "--gpu", "\x1b[31m1"}}) {
    auto r = run_gpureap(args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_FALSE(raw_control(r.err)) << r.err;
    EXPECT_NE(r.err.find("\\x1b"), std::string::npos) << r.err;
  }
}

TEST(TerminalText, AProcessNameWithABidiOverrideDoesNotRenderReversed) {
  FakeDevRoot dev;
  Child named = holding(dev, "nvidia0", [] { ::prctl(PR_SET_NAME, "gpu\u202Egnp.sh"); });
  auto r = run_gpureap({"ps", "--dev-root", dev.path(), "--nvml-library", kNoNvml, "--no-color"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("\u202E"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu\\u{202e}gnp"), std::string::npos) << r.out;
  auto csv = run_gpureap({"ps", "--csv", "--dev-root", dev.path(), "--nvml-library", kNoNvml});
  EXPECT_EQ(csv.out.find("\u202E"), std::string::npos) << csv.out;
}

// Characters that draw nothing but hide or reorder text: the Arabic letter mark (a bidi control),
// the word joiner and the tag characters, which carry a text no reader sees. The name shows them
// escaped, in the table and in CSV.
TEST(TerminalText, AProcessNameWithInvisibleCharactersShowsThemEscaped) {
  FakeDevRoot dev;
  Child named = holding(dev, "nvidia0", [] { ::prctl(PR_SET_NAME, "z\u2060\u061C\U000E0041y"); });
  for (const auto& format : {"--no-color", "--csv"}) {
    auto r = run_gpureap({"ps", format, "--dev-root", dev.path(), "--nvml-library", kNoNvml});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const char* hidden : {"\u2060", "\u061C", "\U000E0041"})
      EXPECT_EQ(r.out.find(hidden), std::string::npos) << format << ": " << r.out;
    EXPECT_NE(r.out.find("z\\u{2060}\\u{061c}\\u{e0041}y"), std::string::npos) << r.out;
  }
}

// A name's bytes that only look like UTF-8 (a surrogate, a code point above U+10FFFF) are
// escaped byte by byte, as any other invalid byte: the output stays UTF-8 and shows each one.
TEST(TerminalText, AProcessNameThatIsNotUtf8IsEscapedByteByByte) {
  FakeDevRoot dev;
  Child named =
      holding(dev, "nvidia0", [] { ::prctl(PR_SET_NAME, "s\xED\xA0\x80t\xF4\x90\x80\x80u"); });
  for (const auto& format : {"--no-color", "--csv"}) {
    auto r = run_gpureap({"ps", format, "--dev-root", dev.path(), "--nvml-library", kNoNvml});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(strictly_utf8(r.out)) << format << ": " << r.out;
    EXPECT_NE(r.out.find("s\\xed\\xa0\\x80t\\xf4\\x90\\x80\\x80u"), std::string::npos) << r.out;
  }
}

namespace wide_text {

// A job that holds nvidia0 and runs the shell through a link named `name` in `dir`, with `arg`
// after its script: its command line reads `name -c LOOP sh ARG`. Its naps close the file, so
// they hold nothing.
Child wide_job(const FakeDevRoot& dev, const TempDir& dir, const std::string& name,
               const std::string& arg) {
  const std::string program = dir.file(name);
  EXPECT_EQ(::symlink("/bin/sh", program.c_str()), 0) << program;
  Ready ready;
  Child job([&] {
    int fd = hold(dev.dev("nvidia0"));
    if (fd != 9) {
      ::dup2(fd, 9);
      ::close(fd);
    }
    ready.signal();
    ::execl(program.c_str(), program.c_str(), "-c", "while :; do sleep 5 9<&-; done", "sh",
            arg.c_str(), nullptr);
    ::_exit(127);
  });
  ready.wait();
  EXPECT_TRUE(wait_until([&] {
    return read_text("/proc/" + std::to_string(job.pid()) + "/cmdline").find(arg) !=
           std::string::npos;
  }));
  return job;
}

}  // namespace wide_text

// Emoji take two columns on a terminal, as CJK characters do: a command line of them is cut to
// the terminal's width by its columns, so no line wraps into a row of its own.
TEST(TerminalText, WideCharactersInACommandLineKeepEveryLineInTheTerminal) {
  FakeDevRoot dev;
  std::string rockets, melting;
  for (int i = 0; i < 40; ++i) rockets += "\U0001F680";              // 🚀
  for (int i = 0; i < 40; ++i) melting += "\u231A\u2705\U0001FAE0";  // ⌚✅🫠
  TempDir programs;
  Child job = wide_text::wide_job(dev, programs, rockets, melting);
  for (const std::string view : {"", "--tree"}) {
    std::vector<std::string> args{"ps",       "--no-color",     "--dev-root",
                                  dev.path(), "--nvml-library", kNoNvml};
    if (!view.empty()) args.push_back(view);
    auto r = run_gpureap(args, {"COLUMNS=80", "LC_ALL=C.UTF-8"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\U0001F680\U0001F680"), std::string::npos) << r.out;
    for (const auto& line : lines_of(r.out))
      EXPECT_LE(terminal_columns(line), 80u) << view << ": " << line << "\n" << r.out;
  }
}

}  // namespace
}  // namespace gpureap::testing
