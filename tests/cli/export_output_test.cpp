// `gemvtune export --out` (issue 10, item 5): it wrote X.partial and renamed it over X, so a
// symlink, FIFO or character device became a regular file (as root, `--out /dev/null` would
// replace /dev/null) and `--out /dev/stdout` failed. Now only a regular file is replaced
// atomically; anything else is written through and stays what it is.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/sandbox.hpp"

namespace gemvtune::cli_test {
namespace {

namespace fs = std::filesystem;
using cache_test::make_key;
using cache_test::make_record;

struct Export : Sandbox {
  std::string db;
  void SetUp() override { db = make_cache("cache.sqlite", {make_record(make_key(4096, 4096))}); }

  // The document export writes to stdout, to compare with what reached the target.
  std::string document() {
    const CliResult r = run({"export", "--db", db});
    EXPECT_EQ(r.status, 0) << shown(r);
    return r.out;
  }

  // Nothing named *.partial* is left beside the target.
  void expect_no_temporary_files() {
    for (const auto& [path, what] : files()) EXPECT_FALSE(contains(path, ".partial")) << path;
  }
};

TEST_F(Export, ARegularFileIsReplacedAtomicallyKeepingItsMode) {
  const std::string out = write_file("backup.json", "old backup");
  ::chmod(out.c_str(), 0640);
  const CliResult r = run({"export", "--db", db, "--out", out});
  ASSERT_EQ(r.status, 0) << shown(r);
  EXPECT_EQ(cache_test::read_bytes(out), document());
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all, fs::perms(0640));
  expect_no_temporary_files();
}

// A new file gets the mode the umask gives any new file (the writer no longer reads the umask by
// setting it, which would change it for a library user's other threads meanwhile).
TEST_F(Export, ANewFileGetsTheUmasksMode) {
  const mode_t before = ::umask(027);
  const std::string out = dir.file("new.json");
  const CliResult r = run({"export", "--db", db, "--out", out});
  ::umask(before);
  ASSERT_EQ(r.status, 0) << shown(r);
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all, fs::perms(0640));
  expect_no_temporary_files();
}

TEST_F(Export, ASymlinkStaysASymlinkAndItsTargetGetsTheDocument) {
  const std::string target = write_file("target.json", "old");
  fs::create_symlink(target, dir.file("link.json"));
  const CliResult r = run({"export", "--db", db, "--out", dir.file("link.json")});
  ASSERT_EQ(r.status, 0) << shown(r);
  EXPECT_TRUE(fs::is_symlink(dir.file("link.json")));
  EXPECT_EQ(cache_test::read_bytes(target), document());
  expect_no_temporary_files();
}

// /dev/stdout is a symlink to /proc/self/fd/1; one in the sandbox behaves the same. Never
// /dev/stdout itself: run as root, a build with the bug replaces it with a regular file.
TEST_F(Export, StdoutThroughASymlinkGetsTheDocument) {
  fs::create_symlink("/proc/self/fd/1", dir.file("stdout"));
  const CliResult r = run({"export", "--db", db, "--out", dir.file("stdout")});
  ASSERT_EQ(r.status, 0) << shown(r);
  EXPECT_TRUE(fs::is_symlink(dir.file("stdout")));
  EXPECT_EQ(r.out, document());
}

TEST_F(Export, AFifoGetsTheDocumentAndStaysAFifo) {
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string received = dir.file("received.json");
  const pid_t reader = ::fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {  // cat pipe > received.json, for at most 30 s
    ::alarm(30);
    const int in = ::open(fifo.c_str(), O_RDONLY);
    const int out = ::open(received.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buf[4096];
    for (ssize_t n; in >= 0 && out >= 0 && (n = ::read(in, buf, sizeof buf)) > 0;)
      if (::write(out, buf, static_cast<std::size_t>(n)) != n) ::_exit(1);
    ::_exit(0);
  }
  const CliResult r = run({"export", "--db", db, "--out", fifo}, "", 20);
  const bool still_fifo = fs::is_fifo(fifo);
  if (!still_fifo) ::kill(reader, SIGKILL);  // replaced: the reader would wait forever
  int status = 0;
  ::waitpid(reader, &status, 0);
  EXPECT_EQ(r.status, 0) << shown(r);
  EXPECT_TRUE(still_fifo) << "the FIFO was replaced";
  if (still_fifo) {
    EXPECT_EQ(cache_test::read_bytes(received), document());
  }
  expect_no_temporary_files();
}

// A character device like /dev/null; needs root to make one, so skipped otherwise.
TEST_F(Export, ACharacterDeviceIsWrittenNotReplaced) {
  const std::string null = dir.file("null");
  if (::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) GTEST_SKIP() << "cannot mknod (not root)";
  const CliResult r = run({"export", "--db", db, "--out", null});
  EXPECT_EQ(r.status, 0) << shown(r);
  struct stat st {};
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device was replaced by a regular file";
  expect_no_temporary_files();
}

TEST_F(Export, ADirectoryOrTheCacheItselfIsRefusedAndLeftAlone) {
  fs::create_directory(dir.file("backups"));
  document();  // a first read leaves the -wal and -shm of a WAL cache beside it (SQLite's doing)
  const auto before = files();
  const CliResult to_dir = run({"export", "--db", db, "--out", dir.file("backups")});
  EXPECT_NE(to_dir.status, 0) << shown(to_dir);
  EXPECT_TRUE(contains(to_dir.err, "directory")) << shown(to_dir);
  const CliResult to_cache = run({"export", "--db", db, "--out", db});
  EXPECT_EQ(to_cache.status, 2) << shown(to_cache);
  EXPECT_TRUE(contains(to_cache.err, "is the cache itself")) << shown(to_cache);
  // SQLite's files beside the cache, there or not: the -wal holds committed entries that an
  // export written over it destroyed.
  for (const char* side : {"-wal", "-shm", "-journal"}) {
    const CliResult r = run({"export", "--db", db, "--out", db + side});
    EXPECT_EQ(r.status, 2) << side << ": " << shown(r);
    EXPECT_TRUE(contains(r.err, "writing JSON there would destroy it")) << shown(r);
  }
  EXPECT_TRUE(files() == before);
}

// A cache's file is refused by any name that reaches it (relative, through "..").
TEST_F(Export, TheCacheIsRefusedByAnyPathToIt) {
  fs::create_directory(dir.file("sub"));
  const std::string roundabout = dir.file("sub") + "/../cache.sqlite-wal";
  const CliResult r = run({"export", "--db", db, "--out", roundabout});
  EXPECT_EQ(r.status, 2) << shown(r);
  EXPECT_TRUE(contains(r.err, "write-ahead log")) << shown(r);
}

// Every command's answer on stdout: a stdout that cannot take it (a full disk) fails the run.
TEST_F(Export, AnAnswerStdoutCannotTakeFailsTheRun) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"list", "--db", db, "--json"}, std::vector<std::string>{"--help"},
        std::vector<std::string>{"emit", "t128_r2_kw1_v16_u4_sk1_cs"}}) {
    std::string command = "'" + cli_path() + "'";
    for (const std::string& a : args) command += " '" + a + "'";
    command += " > /dev/full 2> /dev/null";
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << command;
    EXPECT_EQ(WEXITSTATUS(status), 1) << command;
  }
}

}  // namespace
}  // namespace gemvtune::cli_test
