// moejit._moejit: the Python binding of the public C++ API (<moejit/moejit.hpp>,
// libmoejit.so) and nothing else. It never sees a tensor type: the Python
// package checks tensors and passes device pointers and the stream as
// integers, so one wheel serves any torch version (or none).
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>
#include <moejit/moejit.hpp>

#include <optional>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// A keyword option's value as T; a value of another type is refused naming the option (nanobind's failed cast
// is a bare std::bad_cast, which reached Python as RuntimeError('std::bad_cast')).
template <class T>
T option_value(const std::string& key, nb::handle value, const char* wanted) {
  T out{};
  if (!nb::try_cast<T>(value, out))
    throw moejit::Error(key, key + " = " + nb::cast<std::string>(nb::repr(value)) + " is invalid: must be " + wanted);
  return out;
}

// Python keyword options -> LayerOptions; an unknown key is refused by name.
moejit::LayerOptions layer_options(const nb::dict& d) {
  moejit::LayerOptions o;
  for (auto [key, value] : d) {
    const std::string k = nb::cast<std::string>(key);
    auto as_int = [&] { return option_value<int>(k, value, "an int"); };
    auto as_bool = [&] { return option_value<bool>(k, value, "a bool"); };
    auto as_str = [&] { return option_value<std::string>(k, value, "a str"); };
    if (k == "path")
      o.path = value.is_none() ? std::string() : as_str();
    else if (k == "input_bf16")
      o.input_bf16 = as_bool();
    else if (k == "tile_n")
      o.tile_n = as_int();
    else if (k == "stages")
      o.stages = as_int();
    else if (k == "ctas_per_sm")
      o.ctas_per_sm = as_int();
    else if (k == "schedule")
      o.schedule = value.is_none() ? std::string() : as_str();
    else if (k == "device")
      o.device = as_int();
    else if (k == "check_routes_on_host")
      o.check_routes_on_host = as_bool();
    else if (k == "pdl")
      o.pdl = value.is_none() ? std::nullopt : std::optional<bool>(as_bool());
    else if (k == "use_graphs")
      o.use_graphs = as_bool();
    else
      throw moejit::Error(k, "'" + k +
                                 "' is not a layer option: one of path, input_bf16, tile_n, stages, ctas_per_sm, "
                                 "schedule, device, check_routes_on_host, pdl, use_graphs");
  }
  return o;
}

moejit::Config config_of(const std::string& json) {
  return moejit::config_from_json(json);
}

nb::dict report_dict(const moejit::PrecompileReport& r) {
  nb::dict d;
  d["kernels"] = r.kernels;
  d["compiled"] = r.compiled;
  d["cached"] = r.cached;
  d["errors"] = r.errors;
  d["ok"] = r.ok();
  return d;
}

}  // namespace

NB_MODULE(_moejit, m) {
  m.doc() = "moejit's C++ API (libmoejit.so); use the `moejit` package, not this module.";

  // moejit::Error -> moejit.MoejitError(message, field), a ValueError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const moejit::Error& e) {
      nb::object cls = nb::module_::import_("moejit.errors").attr("MoejitError");
      nb::object err = cls(e.what(), e.field());
      PyErr_SetObject(cls.ptr(), err.ptr());
    }
  });

  m.def("version", &moejit::version);
  m.def("builtin_models", &moejit::builtin_models);
  m.def("builtin_devices", &moejit::builtin_devices);
  m.def("builtin_config_json", [](const std::string& model) { return moejit::to_json(moejit::builtin_config(model)); });
  m.def("config_file_json", [](const std::string& path) { return moejit::to_json(moejit::config_from_file(path)); });
  m.def("normalize_config_json", [](const std::string& json) {
    const moejit::Config c = config_of(json);
    moejit::validate(c);
    return moejit::to_json(c);
  });
  m.def(
      "plan_json",
      [](const std::string& config, int batch, const std::string& device, const nb::dict& options) {
        return moejit::plan(config_of(config), batch, device, layer_options(options)).json;
      },
      "config"_a, "batch"_a, "device"_a, "options"_a);
  m.def(
      "workspace_bytes",
      [](const std::string& config, const std::string& device, const nb::dict& options) {
        return moejit::workspace_bytes(config_of(config), layer_options(options), device);
      },
      "config"_a, "device"_a, "options"_a);
  m.def(
      "precompile",
      [](const std::string& config, const std::vector<int>& batches, const std::vector<std::string>& targets,
         const nb::dict& options, int jobs, nb::object progress) {
        const moejit::Config c = config_of(config);
        const moejit::LayerOptions o = layer_options(options);
        moejit::PrecompileProgress report_progress;
        // The callback's own exception (a TypeError, a progress bar's) reaches the caller as itself: it stops the
        // work (precompile stops at a throwing hook and rethrows it), and is raised in its place.
        std::optional<nb::python_error> callback_error;
        if (!progress.is_none())
          report_progress = [progress, &callback_error](int done, int total, std::string_view kernel) {
            nb::gil_scoped_acquire gil;
            if (callback_error) return;
            try {
              progress(done, total, std::string(kernel));
            } catch (nb::python_error& e) {
              callback_error.emplace(std::move(e));
              throw std::runtime_error("the progress callback raised");
            }
          };
        moejit::PrecompileReport r;
        try {
          nb::gil_scoped_release nogil;  // compiles for seconds; progress takes the GIL back
          r = moejit::precompile(c, batches, targets, o, jobs, report_progress);
        } catch (...) {
          if (callback_error) throw std::move(*callback_error);
          throw;
        }
        return report_dict(r);
      },
      "config"_a, "batches"_a, "targets"_a, "options"_a, "jobs"_a, "progress"_a.none());

  m.def(
      "pack_weights",
      [](const std::string& config, const nb::bytes& w1, const nb::bytes& s1, const nb::bytes& w2, const nb::bytes& s2,
         const nb::dict& options, const std::string& target) {
        auto bytes_of = [](const nb::bytes& b) { return reinterpret_cast<const std::uint8_t*>(b.c_str()); };
        moejit::CheckpointWeightsHost host;
        host.w1 = bytes_of(w1), host.s1 = bytes_of(s1), host.w2 = bytes_of(w2), host.s2 = bytes_of(s2);
        host.w1_bytes = w1.size(), host.s1_bytes = s1.size(), host.w2_bytes = w2.size(), host.s2_bytes = s2.size();
        const moejit::Config c = config_of(config);
        const moejit::LayerOptions o = layer_options(options);
        moejit::PackedWeights p;
        {
          nb::gil_scoped_release nogil;
          p = moejit::pack_weights(c, host, o, target);
        }
        nb::dict d;
        d["w1"] = nb::bytes(reinterpret_cast<const char*>(p.w1.data()), p.w1.size());
        d["w2"] = nb::bytes(reinterpret_cast<const char*>(p.w2.data()), p.w2.size());
        d["top_scale_code"] = p.top_scale_code;
        d["atom"] = p.atom;
        d["subnormal_weight_scales"] = p.subnormal_weight_scales;
        return d;
      },
      "config"_a, "w1"_a, "s1"_a, "w2"_a, "s2"_a, "options"_a, "target"_a);

  nb::class_<moejit::Layer>(m, "Layer")
      .def(
          "__init__",
          [](moejit::Layer* self, const std::string& config, std::uint64_t w1, std::uint64_t s1, std::uint64_t w2,
             std::uint64_t s2, std::uint64_t b1, std::uint64_t b2, const nb::dict& options) {
            const moejit::Config c = config_of(config);
            const moejit::LayerOptions o = layer_options(options);
            // Seconds of compiles and a device sync: the other Python threads (a server's) run meanwhile.
            nb::gil_scoped_release nogil;
            new (self) moejit::Layer(c, {w1, s1, w2, s2, b1, b2}, o);
          },
          "config"_a, "w1"_a, "s1"_a, "w2"_a, "s2"_a, "b1"_a, "b2"_a, "options"_a)
      .def_static(
          "from_packed",
          [](const std::string& config, std::uint64_t w1, std::uint64_t w2, int top_scale_code, const std::string& atom,
             std::uint64_t b1, std::uint64_t b2, const nb::dict& options, bool subnormal_weight_scales) {
            const moejit::Config c = config_of(config);
            const moejit::LayerOptions o = layer_options(options);
            std::optional<moejit::Layer> layer;
            {
              nb::gil_scoped_release nogil;
              layer.emplace(
                  c, moejit::PackedWeightsDevice{w1, w2, top_scale_code, atom, b1, b2, subnormal_weight_scales}, o);
            }
            return std::move(*layer);
          },
          "config"_a, "w1"_a, "w2"_a, "top_scale_code"_a, "atom"_a, "b1"_a, "b2"_a, "options"_a,
          "subnormal_weight_scales"_a = true)
      .def(
          "forward",
          [](moejit::Layer& layer, std::uint64_t x_q, std::uint64_t x_scales, std::uint64_t x_bf16,
             std::uint64_t topk_ids, std::uint64_t topk_weights, std::uint64_t y, int tokens, std::uint64_t workspace,
             std::uintptr_t stream) {
            moejit::ForwardArgs a;
            a.x_q = x_q;
            a.x_scales = x_scales;
            a.x_bf16 = x_bf16;
            a.topk_ids = topk_ids;
            a.topk_weights = topk_weights;
            a.y = y;
            a.tokens = tokens;
            a.workspace = workspace;
            // A first forward of a batch size compiles; a host route check syncs: neither holds the GIL.
            nb::gil_scoped_release nogil;
            layer.forward(a, reinterpret_cast<void*>(stream));
          },
          "x_q"_a, "x_scales"_a, "x_bf16"_a, "topk_ids"_a, "topk_weights"_a, "y"_a, "tokens"_a, "workspace"_a,
          "stream"_a)
      .def("plan_json", [](const moejit::Layer& layer, int tokens) { return layer.plan(tokens).json; })
      .def_prop_ro("workspace_bytes", &moejit::Layer::workspace_bytes)
      .def("release_stream", [](moejit::Layer& layer, std::uintptr_t stream) {
        nb::gil_scoped_release nogil;  // it waits for the stream
        layer.release_stream(reinterpret_cast<void*>(stream));
      });
}
