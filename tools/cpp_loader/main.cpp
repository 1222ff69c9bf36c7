// qplugin_loader: runs a TorchScript model that uses qplugin's ops (e.g. the file written by
// `python -m qplugin`) from a C++ program linked against libtorch only -- no Python in the
// process. Build: build.sh (g++) or CMakeLists.txt; docs/deployment.md. Test:
// tests/test_cpp_loader.py.
//
//   qplugin_loader [--lib PATH] [--threads N] [--threads-run N] [--bench N] MODEL.pt INPUT.pt OUTPUT.pt
//   qplugin_loader [--lib PATH] [--threads N] [--bench N] --pt2 MODEL.pt2 INPUT.pt OUTPUT.pt
//   qplugin_loader [--lib PATH] [--threads N] --bench N --compare-ts MODEL.pt --pt2 MODEL.pt2 INPUT.pt OUTPUT.pt
//
// --lib PATH: qplugin's op library (qplugin/_C*.so) to dlopen; without it, the loader uses the
//   qplugin it was linked with (linked.cpp, which calls qplugin_register_all()), else a _C*.so
//   next to MODEL.pt. INPUT.pt: a tensor saved with torch.save(t, path) in Python (or
//   torch::pickle_save). OUTPUT.pt: the output, written with torch::pickle_save (read it with
//   torch.load). Prints the output's shape and first values, and whether any Python library is
//   mapped into the process (it must not be).
// --threads-run N: after the first forward, runs the same module from N std::threads at once
//   (kThreadsRunIters forwards each, same input) and checks that every output equals the first
//   (values, shape, dtype, strides); exits 4 if any differs or throws.
// --pt2 MODEL.pt2: an AOTInductor package (torch._inductor.aoti_compile_and_package of a
//   qplugin.pt2 model, issue #15) run with torch::inductor::AOTIModelPackageLoader instead of a
//   TorchScript model; qplugin's library is loaded first the same way (its ops and packed-params
//   classes must be registered before the package's proxy executor resolves them).
// --bench N: after the first forward, N more forwards; prints "bench: N runs, median X ms"
//   (wall time per forward, one input).
// --compare-ts MODEL.pt (with --pt2 and --bench N): also loads the TorchScript model, checks that
//   its output equals the package's, and times both interleaved in this one process (N rounds,
//   each one forward of each, the order alternating); prints "compare: torchscript median X ms,
//   pt2 median Y ms, pt2/torchscript R" (exits 4 when the outputs differ).
#include <dlfcn.h>
#include <glob.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <algorithm>
#include <chrono>
#include <functional>

#include <ATen/Parallel.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/script.h>
#include <torch/serialize.h>

// Defined only when linked.cpp (and with it qplugin itself) is linked in: then the loader needs no
// dlopen. Weak, so that the plain build links without it.
extern "C" int64_t qplugin_loader_register_linked(void) __attribute__((weak));

namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw std::runtime_error("qplugin_loader: expected a readable file, got " + path);
  }
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string dirname_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The first qplugin/_C*.so (or libqplugin*.so) next to the model, or "".
std::string library_next_to(const std::string& model) {
  for (const char* pattern : {"/_C*.so", "/libqplugin*.so"}) {
    glob_t g;
    std::string pat = dirname_of(model) + pattern;
    if (glob(pat.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) {
      std::string found = g.gl_pathv[0];
      globfree(&g);
      return found;
    }
    globfree(&g);
  }
  return "";
}

// Shared objects of this process whose name says Python (from /proc/self/maps).
std::vector<std::string> python_libraries_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> found;
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if ((path.find("libpython") != std::string::npos ||
         path.find("libtorch_python") != std::string::npos) &&
        (found.empty() || found.back() != path)) {
      found.push_back(path);
    }
  }
  return found;
}

int usage() {
  std::cerr << "usage: qplugin_loader [--lib PATH] [--threads N] [--threads-run N] [--bench N] "
               "MODEL.pt INPUT.pt OUTPUT.pt\n"
               "       qplugin_loader [--lib PATH] [--threads N] [--bench N] [--compare-ts "
               "MODEL.pt] --pt2 MODEL.pt2 INPUT.pt OUTPUT.pt\n";
  return 2;
}

constexpr int kThreadsRunIters = 8;

bool same_output(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides() && a.dtype() == b.dtype() &&
         torch::equal(a, b);
}

// Runs model.forward({x}) from n threads at once, kThreadsRunIters times each; returns the number
// of outputs that differ from `first` or calls that threw (0: all equal), and prints them.
int threads_run(torch::jit::Module& model, const torch::Tensor& x, const torch::Tensor& first,
                int n) {
  std::mutex mu;
  int bad = 0;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < kThreadsRunIters; ++i) {
        try {
          c10::InferenceMode guard;
          c10::IValue out = model.forward({x});
          if (!out.isTensor() || !same_output(out.toTensor(), first)) {
            std::lock_guard<std::mutex> lock(mu);
            ++bad;
            std::cerr << "qplugin_loader: --threads-run: thread " << t << " run " << i
                      << ": expected the first output, got a different "
                      << (out.isTensor() ? "tensor" : out.tagKind()) << "\n";
          }
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          ++bad;
          std::cerr << "qplugin_loader: --threads-run: thread " << t << " run " << i
                    << " threw: " << e.what() << "\n";
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  return bad;
}

// Median wall time (ms) of n calls of fn.
double median_ms(int n, const std::function<void()>& fn) {
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib;
  int threads = 0;
  int run_threads = 0;
  int bench = 0;
  std::string pt2, compare_ts;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--lib" && i + 1 < argc) {
      lib = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--threads-run" && i + 1 < argc) {
      run_threads = std::atoi(argv[++i]);
      if (run_threads <= 0) {
        std::cerr << "qplugin_loader: expected --threads-run N with N > 0, got " << argv[i]
                  << "\n";
        return 2;
      }
    } else if (a == "--bench" && i + 1 < argc) {
      bench = std::atoi(argv[++i]);
      if (bench <= 0) {
        std::cerr << "qplugin_loader: expected --bench N with N > 0, got " << argv[i] << "\n";
        return 2;
      }
    } else if (a == "--pt2" && i + 1 < argc) {
      pt2 = argv[++i];
    } else if (a == "--compare-ts" && i + 1 < argc) {
      compare_ts = argv[++i];
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      pos.push_back(a);
    }
  }
  if (!pt2.empty()) {
    if (run_threads > 0) {
      std::cerr << "qplugin_loader: expected no --threads-run with --pt2 (one AOTInductor "
                   "runner), got --threads-run "
                << run_threads << "\n";
      return 2;
    }
    pos.insert(pos.begin(), pt2);
  }
  if (!compare_ts.empty() && (pt2.empty() || bench <= 0)) {
    std::cerr << "qplugin_loader: expected --compare-ts with --pt2 and --bench N\n";
    return 2;
  }
  if (pos.size() != 3) return usage();
  const std::string model_path = pos[0], input_path = pos[1], output_path = pos[2];
  try {
    if (lib.empty() && qplugin_loader_register_linked != nullptr) {
      std::cout << "qplugin: linked in; qplugin_register_all() found "
                << qplugin_loader_register_linked() << " registration units\n";
    } else {
      if (lib.empty()) lib = library_next_to(model_path);
      if (lib.empty()) {
        std::cerr << "qplugin_loader: expected --lib PATH to qplugin's op library "
                     "(qplugin/_C*.so; python -c 'import qplugin; print(qplugin.library_path())')"
                     ", got none and no _C*.so next to the model\n";
        return 2;
      }
      // RTLD_GLOBAL: the ops register themselves with libtorch's dispatcher from the library's
      // static initialisers; nothing else is needed.
      if (dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
        std::cerr << "qplugin_loader: could not dlopen " << lib << ": " << dlerror() << "\n";
        return 1;
      }
      std::cout << "qplugin: loaded " << lib << "\n";
    }
    if (threads > 0) at::set_num_threads(threads);
    auto isa = c10::Dispatcher::singleton()
                   .findSchemaOrThrow("qplugin::_cpu_isa", "")
                   .typed<std::string()>()
                   .call();
    std::cout << "qplugin: kernel ISA " << isa << ", " << at::get_num_threads() << " thread(s)\n";

    std::vector<char> bytes = read_file(input_path);
    c10::IValue in = torch::pickle_load(bytes);
    if (!in.isTensor()) {
      std::cerr << "qplugin_loader: expected INPUT to hold a tensor (torch.save(tensor, path)), "
                   "got "
                << in.tagKind() << "\n";
      return 2;
    }
    torch::Tensor x = in.toTensor();
    c10::IValue out;
    std::function<c10::IValue()> forward;
    std::unique_ptr<torch::jit::Module> model;
    std::unique_ptr<torch::inductor::AOTIModelPackageLoader> package;
    if (!pt2.empty()) {
      if (!std::ifstream(pt2)) {
        throw std::runtime_error("expected a readable .pt2 package, got " + pt2);
      }
      package = std::make_unique<torch::inductor::AOTIModelPackageLoader>(pt2);
      std::cout << "loaded AOTInductor package " << pt2 << "\n";
      forward = [&]() -> c10::IValue {
        std::vector<at::Tensor> outs = package->run({x});
        if (outs.size() != 1) {
          throw std::runtime_error("expected the package to return one tensor, got " +
                                   std::to_string(outs.size()));
        }
        return outs[0];
      };
    } else {
      model = std::make_unique<torch::jit::Module>(torch::jit::load(model_path));
      model->eval();
      forward = [&]() -> c10::IValue { return model->forward({x}); };
    }
    {
      c10::InferenceMode guard;
      out = forward();
    }
    if (bench > 0 && !compare_ts.empty()) {
      // Both deployments in this process, interleaved (the order alternates per round), so
      // that machine noise and process-to-process spread hit both alike.
      torch::jit::Module ts = torch::jit::load(compare_ts);
      ts.eval();
      c10::InferenceMode guard;
      const c10::IValue ts_out = ts.forward({x});
      if (!ts_out.isTensor() || !out.isTensor() || !same_output(ts_out.toTensor(),
                                                                out.toTensor())) {
        std::cerr << "qplugin_loader: --compare-ts: expected the TorchScript model's output to "
                     "equal the package's, got a different one\n";
        return 4;
      }
      for (int i = 0; i < 3; ++i) {  // warm-up
        ts.forward({x});
        forward();
      }
      std::vector<double> a, b;
      auto time_ms = [](const std::function<void()>& fn) {
        auto t0 = std::chrono::steady_clock::now();
        fn();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
            .count();
      };
      for (int i = 0; i < bench; ++i) {
        if (i % 2 == 0) {
          a.push_back(time_ms([&] { ts.forward({x}); }));
          b.push_back(time_ms([&] { forward(); }));
        } else {
          b.push_back(time_ms([&] { forward(); }));
          a.push_back(time_ms([&] { ts.forward({x}); }));
        }
      }
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      const double ma = a[a.size() / 2], mb = b[b.size() / 2];
      std::cout << "compare: " << bench << " rounds, torchscript median " << ma
                << " ms, pt2 median " << mb << " ms, pt2/torchscript " << mb / ma << "\n";
    } else if (bench > 0) {
      c10::InferenceMode guard;
      forward();  // warm-up
      const double ms = median_ms(bench, [&] { forward(); });
      std::cout << "bench: " << bench << " runs, median " << ms << " ms\n";
    }
    if (!out.isTensor()) {
      std::cerr << "qplugin_loader: expected the model to return a tensor, got " << out.tagKind()
                << "\n";
      return 1;
    }
    if (run_threads > 0) {
      const torch::Tensor first = out.toTensor();
      const int bad = threads_run(*model, x, first, run_threads);
      if (bad != 0) {
        std::cerr << "qplugin_loader: --threads-run: " << bad << " of "
                  << run_threads * kThreadsRunIters
                  << " concurrent outputs differ from the first\n";
        return 4;
      }
      std::cout << "threads-run: " << run_threads << " threads x " << kThreadsRunIters
                << " runs: every output equals the first\n";
    }
    torch::Tensor y = out.toTensor().contiguous();
    std::vector<char> data = torch::pickle_save(y);
    std::ofstream f(output_path, std::ios::binary);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) {
      std::cerr << "qplugin_loader: could not write " << output_path << "\n";
      return 1;
    }
    std::cout << "input " << x.sizes() << " -> output " << y.sizes() << " " << y.dtype()
              << ", written to " << output_path << "\n";
    auto flat = y.to(torch::kFloat).reshape({-1});
    std::cout << "first values:";
    for (int64_t i = 0; i < std::min<int64_t>(flat.numel(), 10); ++i) {
      std::cout << " " << flat[i].item<float>();
    }
    std::cout << "\n";
    auto py = python_libraries_mapped();
    std::cout << "python libraries mapped: " << (py.empty() ? "none" : "");
    for (const auto& p : py) std::cout << p << " ";
    std::cout << "\n";
    return py.empty() ? 0 : 3;
  } catch (const std::exception& e) {
    std::cerr << "qplugin_loader: " << e.what() << "\n";
    return 1;
  }
}
