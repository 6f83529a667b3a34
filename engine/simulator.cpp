// Simulator: the host-side owner of one batch of worlds. World snapshots and
// checkpoints are built from the per-world regions of the storage layout, so
// they hold exactly what a step reads and writes.

#include "engine/simulator.hpp"

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "engine/checkpoint.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda/sha256.hpp"
#if defined(ORRERY_WITH_CUDA)
#include "engine/cuda/cuda_backend.hpp"
#endif

namespace orrery {

namespace {
CudaBackendFactory g_cuda_factory = nullptr;

int cuda_index(const std::string& device) {
    if (device == "cuda") return 0;
    try {
        size_t used = 0;
        int i = std::stoi(device.substr(5), &used);
        if (used + 5 == device.size() && i >= 0) return i;
    } catch (const std::exception&) {}
    throw Error("device='" + device + "' is not understood; expected 'cpu', 'cuda', 'cuda:N' or 'auto'");
}

/// `v` with newlines and backslashes escaped, so that it stays on its schema line.
std::string one_line(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\n')
            out += "\\n";
        else if (c == '\\')
            out += "\\\\";
        else
            out += c;
    }
    return out;
}
} // namespace

void set_cuda_backend_factory(CudaBackendFactory f) { g_cuda_factory = f; }

size_t TensorView::bytes() const {
    size_t n = dtype_size(dtype);
    for (int64_t d : shape) n *= size_t(d);
    return n;
}

bool Backend::request_snapshot(const std::vector<Region>& regions, uint32_t world) {
    if (host_snapshot_pending_) return false;
    synchronize();
    size_t total = 0;
    for (const Region& r : regions) total += r.bytes_per_world;
    host_snapshot_.resize(total);
    size_t at = 0;
    for (const Region& r : regions) {
        copy_to_host(host_snapshot_.data() + at, r.base + r.bytes_per_world * world, r.bytes_per_world);
        at += r.bytes_per_world;
    }
    host_snapshot_pending_ = true;
    return true;
}

bool Backend::poll_snapshot(std::vector<uint8_t>& out) {
    if (!host_snapshot_pending_) return false;
    out.swap(host_snapshot_);
    host_snapshot_pending_ = false;
    return true;
}

std::unique_ptr<Backend> make_backend(const EnvSpec& spec, const Plan& plan, const StorageLayout& layout,
                                      const SimOptions& opts) {
    const std::string& d = opts.device;
    if (d == "cpu") return std::make_unique<CpuBackend>(spec, plan, layout, opts.threads, opts.cpu_lanes);
#if defined(ORRERY_WITH_CUDA)
    if (!g_cuda_factory) register_cuda_backend(); // explicit: static initialisers in static libraries get dropped
#endif
    if (d == "auto") {
        if (g_cuda_factory) {
            try {
                return g_cuda_factory(spec, plan, layout, opts, 0);
            } catch (const Error& e) {
                std::fprintf(stderr, "orrery: device='auto': CUDA unavailable (%s); using the CPU\n", e.what());
            }
        } else {
            std::fprintf(stderr, "orrery: device='auto': this build has no CUDA backend; using the CPU\n");
        }
        return std::make_unique<CpuBackend>(spec, plan, layout, opts.threads, opts.cpu_lanes);
    }
    if (d.rfind("cuda", 0) == 0) {
        int index = cuda_index(d);
        if (!g_cuda_factory)
            throw Error("device='" + d + "' was asked for, but this build of Orrery has no CUDA backend");
        return g_cuda_factory(spec, plan, layout, opts, index);
    }
    throw Error("device='" + d + "' is not understood; expected 'cpu', 'cuda', 'cuda:N' or 'auto'");
}

Simulator::Simulator(EnvSpec spec, SimOptions opts) : spec_(std::move(spec)), opts_(std::move(opts)) {
    spec_.validate();
    plan_ = make_plan(spec_, opts_.autoreset, opts_.random_inputs);
    layout_ = make_layout(spec_, opts_.num_worlds, opts_.autoreset);
    backend_ = make_backend(spec_, plan_, layout_, opts_);
    const Storage& s = backend_->storage();
    if (s.config_bytes)
        backend_->copy_from_host(const_cast<uint8_t*>(s.config), spec_.config_bytes().data(), s.config_bytes);
    const std::vector<uint8_t> assets = spec_.asset_blob();
    if (!assets.empty()) backend_->copy_from_host(const_cast<uint8_t*>(s.assets), assets.data(), assets.size());
    regions_ = layout_.regions(s);

    const DeviceKind dev = backend_->device();
    const int index = backend_->device_index();
    const int64_t W = opts_.num_worlds;
    uint32_t final_i = 0;
    for (const ExportSpec& e : spec_.exports()) {
        const ComponentSpec& c = spec_.component_specs()[e.component];
        const ArchetypeSpec& a = spec_.archetype_specs()[e.archetype];
        TensorView t;
        t.name = e.name;
        t.data = s.tables[e.archetype].columns[e.component];
        t.dtype = c.dtype;
        t.shape = {W, int64_t(a.capacity)};
        for (uint32_t d : c.dims) t.shape.push_back(d);
        t.user_shape = {W};
        if (!a.singleton) t.user_shape.push_back(a.capacity);
        if (!(c.dims.size() == 1 && c.dims[0] == 1))
            t.user_shape.insert(t.user_shape.end(), c.dims.begin(), c.dims.end());
        t.device = dev;
        t.device_index = index;
        t.input = e.input;
        tensors_.push_back(t);
        if (!e.input && opts_.autoreset == AutoReset::kSameStep) {
            TensorView f = t;
            f.name = "final_" + e.name;
            f.data = s.final_dst[final_i++];
            tensors_.push_back(f);
        }
    }
    tensors_.push_back({"terminated", s.terminated, DType::kU8, {W}, dev, index, false, {W}});
    tensors_.push_back({"truncated", s.truncated, DType::kU8, {W}, dev, index, false, {W}});
    tensors_.push_back({"errors", s.errors, DType::kU32, {W}, dev, index, false, {W}});
    scratch_layout_ = make_layout(spec_, 1, opts_.autoreset);
    auto make_scratch = [&](std::vector<uint8_t>& memory) {
        memory.assign(scratch_layout_.total_bytes + 64, 0);
        uint8_t* base = memory.data() + (64 - reinterpret_cast<uintptr_t>(memory.data()) % 64) % 64;
        Storage st = scratch_layout_.bind(base, nullptr);
        if (st.config_bytes) std::memcpy(const_cast<uint8_t*>(st.config), spec_.config_bytes().data(), st.config_bytes);
        if (!assets.empty()) std::memcpy(const_cast<uint8_t*>(st.assets), assets.data(), assets.size());
        return st;
    };
    scratch_ = make_scratch(scratch_memory_);
    view_scratch_ = make_scratch(view_scratch_memory_);
    reset(0);
}

Simulator::~Simulator() = default;

MemoryReport Simulator::memory_report() const {
    MemoryReport r = layout_.report;
    Backend::ScratchPool pool = backend_->scratch_pool();
    r.scratch_slots = pool.slots;
    r.scratch_bytes = pool.bytes;
    r.scratch_basis = pool.basis;
    r.scratch_shared_use = pool.shared_use;
    r.team_order_bytes = pool.order_bytes;
    r.total_bytes += pool.bytes + pool.order_bytes;
    return r;
}

const TensorView& Simulator::tensor(const std::string& name) const {
    std::string names;
    for (const TensorView& t : tensors_) {
        if (t.name == name) return t;
        names += (names.empty() ? "" : ", ") + t.name;
    }
    throw Error("no tensor named '" + name + "'; this env has: " + names);
}

void Simulator::reset(uint64_t seed) {
    std::lock_guard<FairMutex> lock(mutex_);
    const Storage& s = backend_->storage();
    std::vector<WorldMeta> meta(opts_.num_worlds);
    for (uint32_t w = 0; w < meta.size(); ++w) {
        meta[w].seed = seed;
        meta[w].identity = w;
    }
    std::vector<uint8_t> request(opts_.num_worlds, 2);
    backend_->copy_from_host(s.meta, meta.data(), meta.size() * sizeof(WorldMeta));
    backend_->copy_from_host(s.reset_request, request.data(), request.size());
    backend_->run(plan_.reset);
}

void Simulator::reset_worlds(const std::vector<uint8_t>& mask) {
    if (mask.size() != opts_.num_worlds)
        throw Error("reset mask has " + std::to_string(mask.size()) +
                    " entries; expected num_worlds = " + std::to_string(opts_.num_worlds));
    std::vector<uint8_t> request(mask.size());
    for (size_t i = 0; i < mask.size(); ++i) request[i] = mask[i] ? 1 : 0;
    std::lock_guard<FairMutex> lock(mutex_);
    backend_->copy_from_host(backend_->storage().reset_request, request.data(), request.size());
    backend_->run(plan_.reset);
}

void Simulator::check_inputs(const TensorView* replaced, const void* data) {
    if (backend_->device() != DeviceKind::kCpu) return; // the device records kBadAction instead
    if (opts_.random_inputs) return;                    // the step draws them in range
    for (const auto& [name, range] : spec_.input_ranges()) {
        const TensorView& t = tensor(name);
        size_t n = t.bytes() / dtype_size(t.dtype);
        size_t per_world = n / opts_.num_worlds;
        const uint8_t* values = static_cast<const uint8_t*>(&t == replaced ? data : t.data);
        for (size_t i = 0; i < n; ++i) {
            int64_t v = 0;
            const uint8_t* p = values + i * dtype_size(t.dtype);
            switch (t.dtype) {
            case DType::kU8: v = *p; break;
            case DType::kI8: v = *reinterpret_cast<const int8_t*>(p); break;
            case DType::kU16: v = *reinterpret_cast<const uint16_t*>(p); break;
            case DType::kI16: v = *reinterpret_cast<const int16_t*>(p); break;
            case DType::kI32: v = *reinterpret_cast<const int32_t*>(p); break;
            case DType::kU32: v = *reinterpret_cast<const uint32_t*>(p); break;
            case DType::kI64: v = *reinterpret_cast<const int64_t*>(p); break;
            case DType::kF32: continue;
            }
            if (v < range.first || v > range.second)
                throw Error("'" + name + "' holds " + std::to_string(v) + " at world " + std::to_string(i / per_world) +
                            ", index " + std::to_string(i % per_world) + "; expected a value in [" +
                            std::to_string(range.first) + ", " + std::to_string(range.second) + "]");
        }
    }
}

std::vector<std::vector<uint8_t>> random_inputs(const Simulator& sim, uint64_t& state) {
    std::vector<std::vector<uint8_t>> out;
    for (const auto& [name, range] : sim.spec().input_ranges()) {
        const TensorView& t = sim.tensor(name);
        size_t size = dtype_size(t.dtype), n = t.bytes() / size;
        std::vector<uint8_t>& buffer = out.emplace_back(t.bytes());
        uint64_t span = uint64_t(range.second - range.first + 1);
        for (size_t i = 0; i < n; ++i) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            int64_t v = range.first + int64_t((state >> 11) % span);
            float f = float(v);
            if (t.dtype == DType::kF32)
                std::memcpy(buffer.data() + i * size, &f, size);
            else
                std::memcpy(buffer.data() + i * size, &v, size); // little-endian: low bytes first
        }
    }
    return out;
}

void Simulator::step() {
    check_inputs();
    std::lock_guard<FairMutex> lock(mutex_);
    backend_->run(plan_.step);
    steps_taken_.fetch_add(1, std::memory_order_relaxed);
}

void Simulator::step_reading(const std::string& name, const void* data, const std::vector<OutputCopy>& outputs) {
    const TensorView& t = tensor(name);
    if (!t.input) throw Error("step_reading: '" + name + "' is not an input tensor");
    if (!data) throw Error("step_reading: no data for input '" + name + "'");
    for (const OutputCopy& o : outputs) {
        bool known = false;
        for (const TensorView& v : tensors_) known = known || (v.data == o.column && v.bytes() == o.bytes);
        if (!known || !o.dst)
            throw Error("step_reading: an output copy names " + std::to_string(o.bytes) +
                        " bytes that are no exported tensor of this simulator, or no destination");
    }
    check_inputs(&t, data); // the CPU: checked where they are, before anything changes
    std::lock_guard<FairMutex> lock(mutex_);
    backend_->run_reading(plan_.step, {t.data, data, t.bytes()}, outputs);
    steps_taken_.fetch_add(1, std::memory_order_relaxed);
}

void Simulator::synchronize() { backend_->synchronize(); }

std::vector<uint32_t> Simulator::errors() {
    std::vector<uint32_t> out(opts_.num_worlds);
    backend_->synchronize();
    backend_->copy_to_host(out.data(), backend_->storage().errors, out.size() * 4);
    return out;
}

void Simulator::check_errors() {
    std::vector<uint32_t> e = errors();
    std::ostringstream msg;
    int shown = 0, total = 0;
    for (uint32_t w = 0; w < e.size(); ++w) {
        if (!e[w]) continue;
        ++total;
        if (shown++ < 8) msg << (shown > 1 ? ", " : "") << "world " << w << ": code " << e[w];
    }
    if (total)
        throw Error(std::to_string(total) + " world(s) reported errors in the last step (" + msg.str() +
                    "; 1 = capacity overflow, 2 = stale entity, 3 = bad action, >= 256 env-specific)");
}

void Simulator::check_world(uint32_t w, const char* what) const {
    if (w >= opts_.num_worlds)
        throw Error(std::string(what) + " = " + std::to_string(w) + " is out of range; expected 0 <= " + what + " < " +
                    std::to_string(opts_.num_worlds));
}

size_t Simulator::snapshot_bytes() const {
    size_t n = 0;
    for (const Region& r : regions_) n += r.bytes_per_world;
    return n;
}

WorldSnapshot Simulator::save_world(uint32_t world) {
    check_world(world, "world");
    backend_->synchronize();
    WorldSnapshot snap;
    snap.bytes.resize(snapshot_bytes());
    size_t at = 0;
    for (const Region& r : regions_) {
        backend_->copy_to_host(snap.bytes.data() + at, r.base + r.bytes_per_world * world, r.bytes_per_world);
        at += r.bytes_per_world;
    }
    return snap;
}

void Simulator::check_snapshot(const uint8_t* bytes) {
    load_scratch(bytes, scratch_);
    check_world_storage(spec_, scratch_, 0);
    const Ctx ctx(scratch_, 0);
    for (const EnvSpec::WorldCheck& check : spec_.world_checks()) check(spec_, ctx);
    if (spec_.validate_world) spec_.validate_world(ctx);
}

void Simulator::restore_world(uint32_t world, const WorldSnapshot& snap) {
    check_world(world, "world");
    if (snap.bytes.size() != snapshot_bytes())
        throw Error("snapshot holds " + std::to_string(snap.bytes.size()) + " bytes; expected " +
                    std::to_string(snapshot_bytes()) + " for env '" + spec_.name() + "'");
    try {
        check_snapshot(snap.bytes.data());
    } catch (const Error& e) {
        throw Error("snapshot rejected for world " + std::to_string(world) + ": " + std::string(e.what()));
    }
    backend_->synchronize();
    size_t at = 0;
    for (const Region& r : regions_) {
        backend_->copy_from_host(r.base + r.bytes_per_world * world, snap.bytes.data() + at, r.bytes_per_world);
        at += r.bytes_per_world;
    }
}

void Simulator::copy_world(uint32_t src, uint32_t dst) {
    check_world(src, "src");
    check_world(dst, "dst");
    if (src == dst) return;
    backend_->synchronize();
    for (const Region& r : regions_)
        backend_->copy_within(r.base + r.bytes_per_world * dst, r.base + r.bytes_per_world * src, r.bytes_per_world);
}

void Simulator::load_scratch(const uint8_t* bytes, const Storage& into) {
    size_t at = 0;
    for (const Region& r : scratch_layout_.regions(into)) {
        std::memcpy(r.base, bytes + at, r.bytes_per_world);
        at += r.bytes_per_world;
    }
}

void Simulator::read_world(uint32_t world, const std::function<void(Ctx&)>& fn) {
    load_scratch(save_world(world).bytes.data(), scratch_);
    Ctx ctx(scratch_, 0);
    fn(ctx);
}

bool Simulator::request_world_view(uint32_t world) {
    check_world(world, "world");
    {
        std::lock_guard<std::mutex> state(view_mutex_);
        if (view_requested_) return false; // refused without waiting for a step: the usual case while one is in flight
    }
    std::lock_guard<FairMutex> lock(mutex_); // the copy is queued between two steps
    std::lock_guard<std::mutex> state(view_mutex_);
    if (view_requested_) return false;
    if (!backend_->request_snapshot(regions_, world)) return false;
    view_pending_ = LaggedView{world, steps_taken(), 0, false};
    view_requested_ = true;
    return true;
}

bool Simulator::poll_world_view(const std::function<void(Ctx&, const LaggedView&)>& fn) {
    // Neither the collecting nor fn takes the step lock: a watcher never waits
    // for a step (one blocked in a launch included), and a step never waits for
    // a watcher building its scene. Polls take turns (view_scratch_ and fn);
    // the request state is view_mutex_'s, held briefly.
    std::lock_guard<std::mutex> polling(poll_mutex_);
    LaggedView shown;
    {
        std::lock_guard<std::mutex> state(view_mutex_);
        bool fresh = view_requested_ && backend_->poll_snapshot(view_bytes_);
        if (fresh) {
            view_ = view_pending_;
            view_requested_ = false;
            view_landed_ = true;
        }
        if (!view_landed_) return false;
        view_.lag = steps_taken() - view_.step;
        view_.fresh = fresh;
        shown = view_;
    }
    load_scratch(view_bytes_.data(), view_scratch_);
    Ctx ctx(view_scratch_, 0);
    fn(ctx, shown);
    return true;
}

void Simulator::edit_world(uint32_t world, const std::function<void(Ctx&)>& fn) {
    read_world(world, fn);
    WorldSnapshot snap;
    snap.bytes.resize(snapshot_bytes());
    size_t at = 0;
    for (const Region& r : scratch_layout_.regions(scratch_)) {
        std::memcpy(snap.bytes.data() + at, r.base, r.bytes_per_world);
        at += r.bytes_per_world;
    }
    restore_world(world, snap);
}

std::string Simulator::get_state_json(uint32_t world) {
    if (!spec_.state_to_json) throw Error("env '" + spec_.name() + "' has no JSON state form");
    std::string out;
    read_world(world, [&](Ctx& ctx) { out = spec_.state_to_json(ctx); });
    return out;
}

void Simulator::set_state_json(uint32_t world, const std::string& json) {
    if (!spec_.state_from_json) throw Error("env '" + spec_.name() + "' has no JSON state form");
    edit_world(world, [&](Ctx& ctx) { spec_.state_from_json(ctx, json); });
}

uint64_t Simulator::state_hash(uint32_t world) {
    WorldSnapshot s = save_world(world);
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : s.bytes) h = (h ^ b) * 1099511628211ull;
    return h;
}

std::string Simulator::schema_text() const {
    std::ostringstream out;
    out << "env=" << spec_.name() << "\n";
    out << "num_worlds=" << opts_.num_worlds << "\n";
    out << "autoreset=" << int(opts_.autoreset) << "\n";
    for (const ComponentSpec& c : spec_.component_specs()) out << "component=" << c.name << ":" << c.row_bytes << "\n";
    for (const ArchetypeSpec& a : spec_.archetype_specs()) out << "archetype=" << a.name << ":" << a.capacity << "\n";
    for (const auto& [k, v] : spec_.info()) out << "info." << k << "=" << one_line(v) << "\n";
    out << "config_bytes=" << spec_.config_bytes().size() << "\n";
    const std::vector<uint8_t>& config = spec_.config_bytes();
    out << "config_crc=" << crc32(0L, config.data(), uInt(config.size())) << "\n";
    // Shared assets (hulls, tables) are part of the config: a checkpoint names
    // their content by hash, and a simulator with other assets refuses it.
    const std::vector<uint8_t> assets = spec_.asset_blob();
    if (!assets.empty()) {
        cuda::Sha256 h;
        h.update(assets.data(), assets.size());
        out << "assets_sha256=" << cuda::to_hex(h.digest()) << "\n";
    }
    out << "snapshot_bytes=" << snapshot_bytes() << "\n";
    return out.str();
}

} // namespace orrery
