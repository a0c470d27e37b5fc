#include "common/python_adapter.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "model/error.h"
#include "model/trace_io.h"

namespace lenscheck {

ScratchFolder::ScratchFolder(const std::string& what) {
  char pattern[] = "/tmp/lenscheck-candidate-XXXXXX";
  if (!mkdtemp(pattern)) throw InputError("/tmp", "cannot create a folder for " + what);
  path_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  std::error_code ignored;  // a folder that cannot be removed is left behind, not an error of the run
  std::filesystem::remove_all(path_, ignored);
}

std::filesystem::path python_of(const std::filesystem::path& env) { return env / "bin/python3"; }

bool has_package(const std::filesystem::path& env, const std::string& package) {
  std::error_code error;
  for (const auto& lib : std::filesystem::directory_iterator(env / "lib", error))
    if (std::filesystem::is_directory(lib.path() / "site-packages" / package)) return true;
  return false;
}

namespace {

constexpr int kMissing = 3;  // the adapters' exit code for "a package or kernel I need is missing"

std::string tail_of(const std::filesystem::path& file, size_t chars = 2000) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.size() > chars ? "..." + text.substr(text.size() - chars) : text;
}

// The adapter as a child process: its stdout read a line at a time, each line awaited at most a bound.
class Adapter {
 public:
  Adapter(const AdapterCall& o, const std::filesystem::path& request, const std::filesystem::path& stderr_file,
          const std::string& candidate)
      : candidate_(candidate), stderr_file_(stderr_file) {
    // posix_spawn, not fork: fork runs OpenBLAS's atfork handler, which stops its thread pool under the
    // feet of another thread's running dgemm (calibrate judges on one thread while it starts ONNX Runtime
    // on another), and the two wait on each other for ever. Close-on-exec pipes, so that a child started
    // by another thread does not hold this one's pipe open.
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) throw InputError(candidate, "cannot create a pipe for the adapter");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);  // its own group, so that a kill reaches
    posix_spawnattr_setpgroup(&attributes, 0);                      // whatever Python starts
    // -I: isolated, so that no PYTHONPATH, PYTHONHOME or user site-packages puts another package first.
    std::string python = python_of(o.python_env).string(), isolated = "-I", adapter = o.adapter.string(),
                request_file = request.string();
    char* argv[] = {python.data(), isolated.data(), adapter.data(), request_file.data(), nullptr};
    const int failed = posix_spawn(&pid_, python.c_str(), &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (failed) {
      close(out[0]);
      close(out[1]);
      pid_ = -1;
      throw InputError(candidate, fmt::format("cannot run {}: {}", python, strerror(failed)));
    }
    close(out[1]);
    fd_ = out[0];
  }
  ~Adapter() {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }

  // The next line, or an InputError naming `step` once `seconds` have passed or the adapter has ended.
  std::string line(double seconds, const std::string& step, const std::string& install_hint) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      if (const size_t end = buffer_.find('\n'); end != std::string::npos) {
        std::string l = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return l;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        throw InputError(candidate_, fmt::format("{} took longer than {:g} s; the adapter was killed", step, seconds));
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      const ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n > 0) {
        buffer_.append(chunk, size_t(n));
        continue;
      }
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
      if (WIFEXITED(status) && WEXITSTATUS(status) == kMissing)
        throw InputError(candidate_, fmt::format("{}: {}", tail_of(stderr_file_), install_hint));
      const std::string why = WIFEXITED(status) ? fmt::format("exit code {}", WEXITSTATUS(status)) : "a signal";
      throw InputError(candidate_, fmt::format("the adapter ended ({}) before {}: {}", why, step, tail_of(stderr_file_)));
    }
  }

  void finish(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline)
        throw InputError(candidate_, fmt::format("the adapter did not exit within {:g} s of its last sentence", seconds));
      usleep(10000);
    }
    pid_ = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw InputError(candidate_, fmt::format("the adapter failed after its last sentence: {}", tail_of(stderr_file_)));
  }

 private:
  std::string candidate_;
  std::filesystem::path stderr_file_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
};

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// The milliseconds an adapter's `line` ("ready … MS", "done I MS") ends with; InputError naming the line
// where that is not a number.
double milliseconds(const std::string& word, const std::string& candidate, const std::string& line) {
  size_t used = 0;
  double ms = 0;
  try {
    ms = std::stod(word, &used);
  } catch (const std::exception&) {
  }
  if (used == 0 || used != word.size() || !std::isfinite(ms))
    throw InputError(candidate, fmt::format("the adapter's \"{}\" line ends with \"{}\", not its milliseconds", line, word));
  return ms;
}

}  // namespace

AdapterRun run_adapter(const AdapterCall& call, nlohmann::json request, const std::vector<Encoding>& encodings,
                       const std::string& candidate, const Vocab& vocab) {
  if (!std::filesystem::is_regular_file(call.adapter))
    throw InputError(call.adapter, fmt::format("{}: the {} adapter script is missing", candidate, call.runs));
  const ScratchFolder scratch("the candidate's traces");
  const std::filesystem::path& dir = scratch.path();
  request["out_dir"] = dir.string();
  request["sentences"] = nlohmann::json::array();
  for (const Encoding& e : encodings) request["sentences"].push_back(e.ids);
  std::ofstream(dir / "request.json") << request.dump();

  Adapter adapter(call, dir / "request.json", dir / "stderr.txt", candidate);
  AdapterRun r;
  auto next_line = [&] { return words(adapter.line(call.startup_seconds, "starting", call.install_hint)); };
  std::vector<std::string> ready = next_line();
  for (; !ready.empty() && ready[0] == "fact"; ready = next_line()) {
    if (ready.size() != 3) throw InputError(candidate, fmt::format("the adapter said \"{}\", not `fact <key> <value>`",
                                                                   fmt::join(ready, " ")));
    if (!r.facts.emplace(ready[1], ready[2]).second)
      throw InputError(candidate, fmt::format("the adapter said fact {} twice", ready[1]));
  }
  if (ready.size() < 3 || ready[0] != "ready") throw InputError(candidate, "the adapter did not say ready");
  r.version = fmt::format("{}", fmt::join(ready.begin() + 1, ready.end() - 1, " "));
  r.startup_ms = milliseconds(ready.back(), candidate, "ready");
  for (size_t i = 0; i < encodings.size(); ++i) {
    const std::vector<std::string> done =
        words(adapter.line(call.sentence_seconds, fmt::format("sentence {}", i), call.install_hint));
    if (done.size() != 3 || done[0] != "done" || done[1] != std::to_string(i))
      throw InputError(candidate, fmt::format("the adapter answered \"{}\" for sentence {}", fmt::join(done, " "), i));
    r.sentence_ms.push_back(milliseconds(done[2], candidate, fmt::format("done {}", i)));
    if (call.plain) continue;
    Trace t = load_trace(dir / fmt::format("{}.safetensors", i), vocab);
    if (t.input_ids != encodings[i].ids)
      throw InputError(candidate, fmt::format("the trace of sentence {} holds other token ids", i));
    t.tokens = encodings[i].tokens;
    t.word_ids = encodings[i].word_ids;
    r.traces.push_back(std::move(t));
  }
  adapter.finish(call.sentence_seconds);
  return r;
}

}  // namespace lenscheck
