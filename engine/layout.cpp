// Storage layout: every array of Storage placed in one allocation, sized from
// the declared capacities, plus the plan of ops for each pass.

#include <sstream>

#include "engine/simulator.hpp"

namespace orrery {

struct StorageLayout::Offsets {
    struct Table {
        size_t generation, alive, doomed, free_rows, free_top, high_water, live;
        size_t columns[kMaxComponents];
    };
    Storage shape; ///< counts, sizes, capacities; pointers unset
    Table tables[kMaxArchetypes];
    size_t meta, errors, terminated, truncated, reset_request, config, assets, asset_bytes;
    size_t final_dst[kMaxFinals];
    const uint8_t* final_src_offset[kMaxFinals]; ///< offsets stored as pointers-from-null
};

namespace {
constexpr size_t kNone = ~size_t(0);

struct Packer {
    size_t total = 0;
    size_t place(size_t bytes) {
        size_t at = (total + 63) / 64 * 64;
        total = at + bytes;
        return at;
    }
};
} // namespace

StorageLayout make_layout(const EnvSpec& spec, uint32_t num_worlds, AutoReset mode) {
    spec.validate();
    if (num_worlds == 0) throw Error("num_worlds must be at least 1, got 0");
    StorageLayout out;
    out.offsets = std::make_shared<StorageLayout::Offsets>();
    StorageLayout::Offsets& o = *out.offsets;
    Storage& sh = o.shape;
    sh.num_worlds = num_worlds;
    sh.num_archetypes = uint32_t(spec.archetype_specs().size());
    sh.num_components = uint32_t(spec.component_specs().size());
    sh.config_bytes = uint32_t(spec.config_bytes().size());
    for (uint32_t c = 0; c < sh.num_components; ++c) sh.row_bytes[c] = spec.component_specs()[c].row_bytes;
    // Step scratch: in no world; the backend allocates its slots (Backend::scratch_pool).
    for (const NodeSpec& n : spec.nodes()) {
        for (uint32_t c : n.scratch) sh.scratch_components |= uint64_t(1) << c;
        for (uint32_t c : n.scratch_shared) sh.scratch_shared_components |= uint64_t(1) << c;
    }
    sh.scratch_slot_bytes = scratch_offset(sh, kMaxComponents);
    out.report.scratch_shared_bytes = shared_scratch_offset(sh, kMaxComponents);
    static const char* kinds[] = {"plain", "array", "buffer", "asset"};
    for (uint32_t c = 0; c < sh.num_components; ++c)
        if ((sh.scratch_components >> c) & 1u)
            out.report.scratch.push_back(
                {spec.component_specs()[c].name, kinds[int(spec.component_specs()[c].kind)], sh.row_bytes[c]});
    out.report.scratch_slot_bytes = sh.scratch_slot_bytes;

    Packer p;
    size_t W = num_worlds;
    for (uint32_t a = 0; a < sh.num_archetypes; ++a) {
        const ArchetypeSpec& as = spec.archetype_specs()[a];
        size_t rows = W * as.capacity;
        // Rows are addressed by a 32-bit slot index (world * capacity + row).
        if (uint64_t(rows) > (uint64_t(1) << 32))
            throw Error("env '" + spec.name() + "': archetype '" + as.name + "' needs num_worlds x capacity = " +
                        std::to_string(num_worlds) + " x " + std::to_string(as.capacity) + " = " +
                        std::to_string(rows) + " rows; expected at most 2^32 (num_worlds <= " +
                        std::to_string((uint64_t(1) << 32) / as.capacity) + " for this env)");
        StorageLayout::Offsets::Table& t = o.tables[a];
        size_t start = p.total;
        t.generation = p.place(rows * 4);
        t.alive = p.place(rows);
        t.doomed = p.place(rows);
        t.free_rows = p.place(rows * 4);
        t.free_top = p.place(W * 4);
        t.high_water = p.place(W * 4);
        t.live = p.place(W * 4);
        size_t per_world = as.capacity * 10 + 12;
        for (uint32_t c = 0; c < kMaxComponents; ++c) t.columns[c] = kNone;
        for (uint32_t c : as.components) {
            t.columns[c] = p.place(rows * sh.row_bytes[c]);
            per_world += size_t(as.capacity) * sh.row_bytes[c];
            const ComponentSpec& cs = spec.component_specs()[c];
            bool exported = false;
            for (const ExportSpec& e : spec.exports()) exported = exported || (e.archetype == a && e.component == c);
            out.report.components.push_back({as.name + "." + cs.name, kinds[int(cs.kind)],
                                             size_t(as.capacity) * sh.row_bytes[c], rows * sh.row_bytes[c], exported});
        }
        sh.tables[a].capacity = as.capacity;
        sh.tables[a].singleton = as.singleton ? 1 : 0;
        out.report.archetypes.push_back({as.name, as.capacity, per_world, p.total - start});
    }
    size_t engine_start = p.total;
    o.meta = p.place(W * sizeof(WorldMeta));
    o.errors = p.place(W * 4);
    o.terminated = p.place(W);
    o.truncated = p.place(W);
    o.reset_request = p.place(W);
    o.config = p.place(sh.config_bytes);
    // Shared read-only assets: one copy for all worlds, filled once at creation.
    o.asset_bytes = spec.asset_blob().size();
    o.assets = p.place(o.asset_bytes);
    if (mode == AutoReset::kSameStep) {
        for (const ExportSpec& e : spec.exports()) {
            if (e.input) continue;
            uint32_t i = sh.num_finals++;
            size_t per_world = size_t(spec.archetype_specs()[e.archetype].capacity) * sh.row_bytes[e.component];
            sh.final_bytes[i] = uint32_t(per_world);
            o.final_dst[i] = p.place(W * per_world);
            o.final_src_offset[i] = reinterpret_cast<const uint8_t*>(o.tables[e.archetype].columns[e.component]);
        }
    }
    out.report.engine_bytes = p.total - engine_start - o.asset_bytes;
    out.report.asset_bytes = o.asset_bytes;
    out.total_bytes = p.total;
    out.report.total_bytes = p.total;
    return out;
}

Storage StorageLayout::bind(uint8_t* base, const uint8_t* config) const {
    const Offsets& o = *offsets;
    Storage s = o.shape;
    for (uint32_t a = 0; a < s.num_archetypes; ++a) {
        const Offsets::Table& t = o.tables[a];
        ArchetypeTable& d = s.tables[a];
        d.generation = reinterpret_cast<uint32_t*>(base + t.generation);
        d.alive = base + t.alive;
        d.doomed = base + t.doomed;
        d.free_rows = reinterpret_cast<uint32_t*>(base + t.free_rows);
        d.free_top = reinterpret_cast<int32_t*>(base + t.free_top);
        d.high_water = reinterpret_cast<uint32_t*>(base + t.high_water);
        d.live = reinterpret_cast<uint32_t*>(base + t.live);
        for (uint32_t c = 0; c < kMaxComponents; ++c)
            d.columns[c] = t.columns[c] == kNone ? nullptr : base + t.columns[c];
    }
    s.meta = reinterpret_cast<WorldMeta*>(base + o.meta);
    s.errors = reinterpret_cast<uint32_t*>(base + o.errors);
    s.terminated = base + o.terminated;
    s.truncated = base + o.truncated;
    s.reset_request = base + o.reset_request;
    s.config = s.config_bytes ? base + o.config : nullptr;
    s.assets = o.asset_bytes ? base + o.assets : nullptr;
    (void)config; // the backend copies the config bytes to s.config itself
    for (uint32_t i = 0; i < s.num_finals; ++i) {
        s.final_dst[i] = base + o.final_dst[i];
        s.final_src[i] = base + reinterpret_cast<size_t>(o.final_src_offset[i]);
    }
    return s;
}

std::vector<Region> StorageLayout::regions(const Storage& s) const {
    std::vector<Region> r;
    for (uint32_t a = 0; a < s.num_archetypes; ++a) {
        const ArchetypeTable& t = s.tables[a];
        size_t cap = t.capacity;
        r.push_back({reinterpret_cast<uint8_t*>(t.generation), cap * 4});
        r.push_back({t.alive, cap});
        r.push_back({t.doomed, cap});
        r.push_back({reinterpret_cast<uint8_t*>(t.free_rows), cap * 4});
        r.push_back({reinterpret_cast<uint8_t*>(t.free_top), 4});
        r.push_back({reinterpret_cast<uint8_t*>(t.high_water), 4});
        r.push_back({reinterpret_cast<uint8_t*>(t.live), 4});
        for (uint32_t c = 0; c < s.num_components; ++c)
            if (t.columns[c]) r.push_back({t.columns[c], cap * s.row_bytes[c]});
    }
    r.push_back({reinterpret_cast<uint8_t*>(s.meta), sizeof(WorldMeta)});
    r.push_back({reinterpret_cast<uint8_t*>(s.errors), 4});
    r.push_back({s.terminated, 1});
    r.push_back({s.truncated, 1});
    return r;
}

std::string MemoryReport::to_string() const {
    std::ostringstream out;
    out << "archetype            capacity   bytes/world        bytes\n";
    for (const Row& r : archetypes) {
        out.width(20);
        out << std::left << r.archetype << " ";
        out.width(8);
        out << std::right << r.capacity << " ";
        out.width(13);
        out << r.bytes_per_world << " ";
        out.width(12);
        out << r.bytes << "\n";
    }
    for (const ComponentRow& c : components) {
        out << "  ";
        out.width(18);
        out << std::left << c.component << " ";
        out.width(8);
        out << std::right << c.kind << " ";
        out.width(13);
        out << c.bytes_per_world << " ";
        out.width(12);
        out << c.bytes << (c.exported ? "  exported" : "") << "\n";
    }
    out << "engine (meta, flags, errors, finals): " << engine_bytes << " bytes\n";
    if (asset_bytes) out << "shared assets (one copy for every world): " << asset_bytes << " bytes\n";
    if (scratch_slot_bytes) {
        out << "step scratch (in no world; a slot per worker that runs at once): " << scratch_slot_bytes
            << " bytes a slot\n";
        for (const ScratchRow& r : scratch) {
            out << "  ";
            out.width(18);
            out << std::left << r.component << " ";
            out.width(8);
            out << std::right << r.kind << " ";
            out.width(13);
            out << r.bytes << " a slot\n";
        }
        out << "  pool: " << scratch_slots << " slots (" << scratch_basis << "): " << scratch_bytes << " bytes\n";
        if (scratch_shared_bytes)
            out << "  asked to keep on chip: " << scratch_shared_bytes << " bytes a team"
                << (scratch_shared_use.empty() ? std::string(" (in the slot here)") : " (" + scratch_shared_use + ")")
                << "\n";
    }
    if (team_order_bytes)
        out << "teams ordered by cost (a hint and a place a world): " << team_order_bytes << " bytes\n";
    out << "total: " << total_bytes << " bytes\n";
    return out.str();
}

namespace {
const NodeSpec& barrier_node() {
    static const NodeSpec n{
        SystemRef{"orrery::apply_destroys", NodeKind::kApplyDestroys, &detail::cpu_destroy_node}, Phase::kStep, {}};
    return n;
}

void append_phase(std::vector<Op>& ops, const EnvSpec& spec, Phase list, Phase run_as, bool barrier) {
    std::vector<const NodeSpec*> nodes = spec.ordered(list);
    for (const NodeSpec* n : nodes) ops.push_back({OpKind::kNode, n, run_as});
    bool ends_with_barrier = !nodes.empty() && nodes.back()->system.kind == NodeKind::kApplyDestroys;
    if (barrier && !ends_with_barrier) ops.push_back({OpKind::kNode, &barrier_node(), run_as});
}
} // namespace

std::vector<ClearedOutput> cleared_output_table(const EnvSpec& spec) {
    std::vector<ClearedOutput> out;
    for (const ExportSpec& e : spec.exports()) {
        if (e.input || e.output != Output::kClearedEachStep) continue;
        uint32_t rows = spec.archetype_specs()[e.archetype].capacity;
        out.push_back({e.archetype, e.component, rows * spec.component_specs()[e.component].row_bytes});
    }
    return out;
}

Plan make_plan(const EnvSpec& spec, AutoReset mode, bool random_inputs) {
    Plan p;
    // Outputs the engine zeroes just before the observe nodes that rebuild them.
    const bool clears = !cleared_output_table(spec).empty();
    auto observe = [&](std::vector<Op>& ops, Phase run_as) {
        if (clears) ops.push_back({OpKind::kClearOutputs, nullptr, run_as});
        append_phase(ops, spec, Phase::kObserve, run_as, false);
    };
    p.autoreset = mode;
    p.step.push_back({OpKind::kBeginStep});
    if (random_inputs) p.step.push_back({OpKind::kRandomInputs});
    append_phase(p.step, spec, Phase::kInit, Phase::kInit, true);
    append_phase(p.step, spec, Phase::kStep, Phase::kStep, true);
    p.step.push_back({OpKind::kEndStep});
    observe(p.step, Phase::kObserve);
    if (mode == AutoReset::kSameStep) {
        p.step.push_back({OpKind::kFinishSameStep});
        append_phase(p.step, spec, Phase::kInit, Phase::kInit, true);
        observe(p.step, Phase::kReobserve);
    }
    p.reset.push_back({OpKind::kBeginRequestedReset});
    append_phase(p.reset, spec, Phase::kInit, Phase::kInit, true);
    observe(p.reset, Phase::kReobserve);
    return p;
}

std::vector<RandomInput> random_input_table(const EnvSpec& spec) {
    std::vector<RandomInput> out;
    for (const auto& [name, range] : spec.input_ranges()) {
        const ExportSpec* e = nullptr;
        for (const ExportSpec& x : spec.exports())
            if (x.name == name) e = &x;
        if (!e) throw Error("input range '" + name + "' names no exported tensor");
        const ComponentSpec& c = spec.component_specs()[e->component];
        if (c.dtype == DType::kF32) continue;
        if (range.second - range.first >= (int64_t(1) << 32))
            throw Error("random inputs: the range of '" + name + "' is wider than 2^32 values");
        uint32_t elem = uint32_t(dtype_size(c.dtype));
        uint32_t per_world = spec.archetype_specs()[e->archetype].capacity * (c.row_bytes / elem);
        out.push_back({e->archetype, e->component, per_world, elem, range.first, range.second});
    }
    return out;
}

} // namespace orrery
