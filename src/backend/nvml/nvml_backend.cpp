#include "backend/nvml/nvml_backend.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "backend/nvml/abi.h"
#include "backend/nvml/device_reader.h"
#include "backend/nvml/drm_nodes.h"
#include "backend/nvml/errors.h"
#include "backend/nvml/library.h"
#include "backend/nvml/mig_devices.h"
#include "backend/nvml/nvidia_presence.h"
#include "backend/nvml/resolver_backend.h"
#include "backend/nvml/symbol_table.h"
#include "base/phase_timer.h"
#include "procfs/resource_shortage.h"

namespace gpureap::backend::nvml {
namespace {

// Where the NVML functions come from, and what keeps them loaded.
struct SymbolSource {
  std::string library;
  SymbolResolver resolver;
  std::shared_ptr<Library> keep_loaded;  // null for injected resolvers
};
using SymbolSourceOpener = std::function<core::Result<SymbolSource>()>;

// How few descriptors left under the limit count as too few for nvmlInit: it opens the driver's
// control device, and on some drivers a few files more (its parameters, MIG capabilities).
constexpr size_t kInitDescriptors = 8;

// Loads and initialises NVML on the first collect() and keeps it for the next ones: a
// daemon collects every few seconds, and nvmlInit costs tens of milliseconds on big hosts.
// A step that fails (no library, driver not loaded) is retried on the next collect(), so
// a daemon started before the driver recovers once it is there.
class NvmlBackend final : public GpuBackend {
 public:
  NvmlBackend(NvmlOptions options, SymbolSourceOpener opener)
      : options_(std::move(options)), opener_(std::move(opener)) {}

  ~NvmlBackend() override {
    // nvmlShutdown before the library is unloaded (source_ is destroyed after this body).
    if (!initialised_) return;
    base::Phase phase("nvml shutdown");
    api_->get<nvmlVoid_fn>(Fn::Shutdown)();
  }

  core::BackendReport collect() override {
    std::lock_guard lock(mutex_);
    core::BackendReport report;
    report.name = "nvml";
    report.vendor = "nvidia";
    try {
      collect_into(report);
    } catch (const std::exception& e) {
      report.available = false;
      report.gpus.clear();
      report.error = std::string("internal error while reading NVML: ") + e.what() +
                     ": please report this as a gpureap bug";
      report.error_code = core::BackendErrorCode::Internal;
    }
    return report;
  }

 private:
  void collect_into(core::BackendReport& report) {
    if (!ready(report)) return;
    const SymbolTable& api = *api_;
    std::optional<base::Phase> phase(std::in_place, "nvml driver version and device count");
    report.driver_version = system_string(Fn::DriverVersion);
    if (auto v = system_string(Fn::NvmlVersion)) report.set_detail("nvml_version", std::move(*v));

    unsigned count = 0;
    auto get_count = api.get<nvmlDeviceGetCount_fn>(Fn::DeviceGetCount);
    if (nvmlReturn_t rc = get_count(&count); rc != NVML_SUCCESS) {
      report.error = init_error(rc, api.name(Fn::DeviceGetCount), nvml_error_text(api, rc)).text();
      report.error_code = init_error_code(rc);
      return;
    }
    phase.reset();
    report.available = true;
    report.gpus.reserve(count);
    known_.resize(count);
    // Each GPU on a thread of its own (NVML is thread-safe; each thread touches only its GPU's
    // known_ entry): a node's GPUs are read in the time of its slowest instead of their sum.
    std::vector<std::future<core::Gpu>> others;
    auto read = [this, &api](unsigned index) {
      return read_gpu(api, index, options_.pid_max, known_[index]);
    };
    for (unsigned index = 1; index < count; ++index) try {
        others.push_back(std::async(std::launch::async, read, index));
      } catch (const std::system_error&) {
        break;  // no thread to be had: the rest are read here, in turn
      }
    report.gpus.push_back(read(0));
    for (auto& gpu : others) report.gpus.push_back(gpu.get());
    for (auto index = static_cast<unsigned>(report.gpus.size()); index < count; ++index)
      report.gpus.push_back(read(index));
    if (options_.proc_root) attach_mig_capabilities(report.gpus, *options_.proc_root);
    if (options_.sys_root) attach_drm_nodes(report.gpus, *options_.sys_root);
    note_missing_capabilities(api, report);
  }

  // One note per capability the library lacks functions for. MIG's functions matter only where
  // a GPU is in MIG mode (or its mode is unknown): elsewhere the note is --verbose's alone.
  static void note_missing_capabilities(const SymbolTable& api, core::BackendReport& report) {
    const bool mig_in_use = std::any_of(report.gpus.begin(), report.gpus.end(),
                                        [](const core::Gpu& g) { return g.split_mode != false; });
    std::string quiet;
    for (const auto& m : api.missing_capabilities()) {
      std::string functions;
      for (const auto& f : m.functions) functions += (functions.empty() ? "" : ", ") + f;
      std::string note = "this NVML library lacks the functions for " + m.serves + " (" +
                         functions + "), so they are unknown";
      const bool mig = m.serves == "MIG instances";
      if (mig && !mig_in_use)
        quiet += (quiet.empty() ? "" : "\n") + note;
      else
        report.warnings.push_back(std::move(note));
    }
    if (!quiet.empty()) report.set_detail("quiet_notes", std::move(quiet));
  }

  // Library loaded, symbols resolved, NVML initialised; otherwise report.error says why.
  bool ready(core::BackendReport& report) {
    if (!source_) {
      base::Phase phase("nvml library load");
      auto opened = opener_();
      if (!opened) {
        report.error = opened.error().text();
        // Out of descriptors, gpureap cannot tell whether the library is there, nor read the
        // device nodes that would say the machine has no NVIDIA GPU.
        if (procfs::is_resource_shortage(opened.error().code)) {
          report.error_code = core::BackendErrorCode::OutOfResources;
          report.shortage = procfs::shortage_of(opened.error().code);
          return false;
        }
        report.error_code = core::BackendErrorCode::LibraryNotFound;
        unless_nvidia_hardware(report);
        return false;
      }
      source_ = std::move(opened.value());
    }
    report.library = source_->library;
    if (!api_) {
      auto table = SymbolTable::resolve(source_->resolver);
      if (!table) {
        report.error = source_->library + ": " + table.error().text();
        report.error_code = core::BackendErrorCode::SymbolMissing;
        source_.reset();
        return false;
      }
      api_ = table.value();
    }
    if (!initialised_) {
      base::Phase phase("nvml init");
      nvmlReturn_t rc = api_->get<nvmlVoid_fn>(Fn::Init)();
      if (rc != NVML_SUCCESS) {
        // The library opens the control device and a few files more as it starts: a process
        // without them gets a code that blames the driver or permissions. The kernel's word on
        // gpureap's own descriptors tells it apart, and no device node is read meanwhile.
        if (init_may_have_lacked_a_file(rc))
          if (auto use = procfs::descriptors_nearly_spent(kInitDescriptors)) {
            report.error =
                init_starved_error(rc, api_->name(Fn::Init), use->open, use->limit, use->hard)
                    .text();
            report.error_code = core::BackendErrorCode::OutOfResources;
            report.shortage = core::Shortage::OwnDescriptors;
            return false;
          }
        report.error = init_error(rc, api_->name(Fn::Init), nvml_error_text(*api_, rc)).text();
        report.error_code = init_error_code(rc);
        if (rc == NVML_ERROR_DRIVER_NOT_LOADED) unless_nvidia_hardware(report);
        return false;
      }
      initialised_ = true;
      known_.clear();  // a new session of the library: its handles are new
    }
    return true;
  }

  // NVML is missing or its driver not loaded on a machine without NVIDIA hardware (only AMD or
  // Intel GPUs): nothing is wrong, there is just no NVIDIA GPU. Said as "no device", which the
  // views leave out; the reason stays in the report (`ps --json`).
  void unless_nvidia_hardware(core::BackendReport& report) const {
    if (!options_.dev_root) return;
    if (nvidia_device_node_exists(*options_.dev_root)) return;
    if (options_.sys_root && nvidia_pci_display_exists(*options_.sys_root)) return;
    report.error = "no NVIDIA GPU: " + *options_.dev_root +
                   " has no NVIDIA device node (nvidiactl, nvidia0, ...); " +
                   report.error.value_or("");
    report.error_code = core::BackendErrorCode::NoDevice;
  }

  std::optional<std::string> system_string(Fn fn) const {
    if (!api_->has(fn)) return std::nullopt;
    char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (api_->get<nvmlSystemGetString_fn>(fn)(text, sizeof text) != NVML_SUCCESS) {
      return std::nullopt;
    }
    text[sizeof text - 1] = '\0';
    if (text[0] == '\0') return std::nullopt;
    return std::string(text);
  }

  NvmlOptions options_;
  SymbolSourceOpener opener_;
  std::mutex mutex_;
  std::optional<SymbolSource> source_;
  std::optional<SymbolTable> api_;
  bool initialised_ = false;
  std::vector<std::optional<StaticFacts>> known_;  // by index, while initialised_
};

}  // namespace

std::unique_ptr<GpuBackend> make_nvml_backend_for(const BackendSettings& settings) {
  NvmlOptions options;
  if (auto named = settings.libraries.find("nvml"); named != settings.libraries.end())
    options.library_path = named->second;
  if (!options.library_path)
    if (const char* env = std::getenv("GPUREAP_NVML_LIBRARY"); env && *env)
      options.library_path = env;
  options.pid_max = settings.pid_max;
  options.dev_root = settings.dev_root;
  options.sys_root = settings.sys_root;
  options.proc_root = settings.proc_root;
  return make_nvml_backend(options);
}

std::unique_ptr<GpuBackend> make_nvml_backend(const NvmlOptions& options) {
  auto opener = [path = options.library_path]() -> core::Result<SymbolSource> {
    auto library = Library::open(path);
    if (!library) return library.error();
    auto shared = std::make_shared<Library>(std::move(library.value()));
    std::string label = shared->path();
    SymbolResolver resolver = [lib = shared.get()](const char* name) { return lib->symbol(name); };
    return SymbolSource{std::move(label), std::move(resolver), std::move(shared)};
  };
  return std::make_unique<NvmlBackend>(options, std::move(opener));
}

std::unique_ptr<GpuBackend> make_nvml_backend_from_resolver(const NvmlOptions& options,
                                                            SymbolResolver resolver,
                                                            std::string library_label) {
  auto opener = [resolver = std::move(resolver),
                 label = std::move(library_label)]() -> core::Result<SymbolSource> {
    return SymbolSource{label, resolver, nullptr};
  };
  return std::make_unique<NvmlBackend>(options, std::move(opener));
}

}  // namespace gpureap::backend::nvml
