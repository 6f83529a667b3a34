// Checkpoints, streamed (engine/checkpoint.hpp), and the engine's check of a
// world's bytes. Worlds move in chunks of about 8 MiB, each region of a chunk
// in one copy. Loading reads the file twice: the first pass checks the CRC,
// the header and every world without touching the simulator; the second loads
// the worlds, each checked again and compared with its first-pass CRC.

#include "engine/checkpoint.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/files.hpp"
#include "engine/simulator.hpp"

namespace orrery {

namespace {

constexpr char kMagic[8] = {'O', 'R', 'R', 'E', 'R', 'Y', 'C', 'K'};
constexpr size_t kHead = 8 + 4 + 4; ///< magic, version, header length

uint32_t crc_update(uint32_t c, const void* p, size_t n) {
    const auto* b = static_cast<const Bytef*>(p);
    while (n) {
        uInt chunk = uInt(std::min<size_t>(n, 1u << 30));
        c = uint32_t(crc32(c, b, chunk));
        b += chunk;
        n -= chunk;
    }
    return c;
}

/// Where a row of archetype `a` is named in errors.
std::string row_name(const EnvSpec& spec, uint32_t a, uint32_t row) {
    return "archetype '" + spec.archetype_specs()[a].name + "' row " + std::to_string(row);
}

void check_table(const EnvSpec& spec, const Storage& s, uint32_t w, uint32_t a) {
    const ArchetypeTable& t = s.tables[a];
    const std::string arch = "archetype '" + spec.archetype_specs()[a].name + "'";
    const size_t base = size_t(w) * t.capacity;
    const uint32_t high = t.high_water[w];
    if (high > t.capacity)
        throw Error(arch + ": high_water = " + std::to_string(high) + "; expected at most the capacity " +
                    std::to_string(t.capacity));
    uint32_t live = 0;
    for (uint32_t row = 0; row < t.capacity; ++row) {
        const size_t r = base + row;
        if (t.alive[r] > 1 || t.doomed[r] > 1)
            throw Error(row_name(spec, a, row) + ": alive = " + std::to_string(t.alive[r]) +
                        ", doomed = " + std::to_string(t.doomed[r]) + "; expected 0 or 1 each");
        if (!t.alive[r]) continue;
        ++live;
        if (row >= high)
            throw Error(row_name(spec, a, row) + " is alive at or above high_water = " + std::to_string(high));
        if (t.generation[r] == 0)
            throw Error(row_name(spec, a, row) + " is alive with generation 0; expected a generation >= 1");
    }
    if (t.live[w] != live)
        throw Error(arch + ": live = " + std::to_string(t.live[w]) + "; expected " + std::to_string(live) +
                    " (the alive rows)");
    if (t.singleton && !t.alive[base])
        throw Error(row_name(spec, a, 0) + " of a singleton archetype is not alive; expected alive = 1");
    const int32_t top = t.free_top[w];
    if (top < 0 || uint32_t(top) > high - live)
        throw Error(arch + ": free_top = " + std::to_string(top) + "; expected 0 to " + std::to_string(high - live) +
                    " (the free rows below high_water)");
    std::vector<uint8_t> seen(t.capacity, 0);
    for (int32_t i = 0; i < top; ++i) {
        const uint32_t row = t.free_rows[base + uint32_t(i)];
        if (row >= high || t.alive[base + row] || seen[row]++)
            throw Error(arch + ": free_rows[" + std::to_string(i) + "] = " + std::to_string(row) +
                        "; expected a distinct row below high_water that is not alive");
    }
}

} // namespace

void check_world_storage(const EnvSpec& spec, const Storage& s, uint32_t w) {
    for (uint32_t a = 0; a < s.num_archetypes; ++a) check_table(spec, s, w, a);
    const uint32_t known = kSkipStep | kResetting | kEntitiesChanged;
    if (s.meta[w].flags & ~known)
        throw Error("meta.flags = " + std::to_string(s.meta[w].flags) + "; expected only the bits of " +
                    std::to_string(known));
    if (s.terminated[w] > 1 || s.truncated[w] > 1)
        throw Error("terminated = " + std::to_string(s.terminated[w]) +
                    ", truncated = " + std::to_string(s.truncated[w]) + "; expected 0 or 1 each");
}

namespace {

/// A file written next to its destination and renamed over it once complete.
class AtomicWriter {
  public:
    explicit AtomicWriter(const std::string& path) : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())) {
        check_path(path, "checkpoint");
        int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd >= 0) f_ = ::fdopen(fd, "wb");
        if (!f_) {
            if (fd >= 0) ::close(fd);
            throw Error("cannot open '" + tmp_ + "' for writing: " + std::strerror(errno));
        }
    }
    ~AtomicWriter() {
        if (!f_) return;
        std::fclose(f_);
        std::remove(tmp_.c_str());
    }
    void put(const void* p, size_t n) {
        ok_ = ok_ && std::fwrite(p, 1, n, f_) == n;
        crc_ = crc_update(crc_, p, n);
    }
    template <class T> void put_value(T v) { put(&v, sizeof(T)); }
    uint32_t crc() const { return crc_; }
    void commit() {
        bool ok = ok_ && std::fflush(f_) == 0;
        ok = ::fsync(fileno(f_)) == 0 && ok;
        ok = std::fclose(f_) == 0 && ok;
        f_ = nullptr;
        if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
            int err = errno;
            std::remove(tmp_.c_str());
            throw Error("cannot write checkpoint '" + path_ + "': " + std::strerror(err));
        }
    }

  private:
    std::string path_, tmp_;
    FILE* f_ = nullptr;
    bool ok_ = true;
    uint32_t crc_ = uint32_t(crc32(0L, Z_NULL, 0));
};

/// The first line where two schema texts differ, said in a user's terms.
std::string first_difference(const std::string& file, const std::string& ours) {
    std::istringstream x(file), y(ours);
    std::string a, b;
    while (true) {
        bool ga = bool(std::getline(x, a)), gb = bool(std::getline(y, b));
        if (!ga && !gb) return "";
        if (a == b && ga == gb) continue;
        const std::string opt = "info.option.";
        if (a.rfind(opt, 0) == 0 && b.rfind(opt, 0) == 0 && a.substr(0, a.find('=')) == b.substr(0, b.find('=')))
            return "env option " + a.substr(opt.size(), a.find('=') - opt.size()) +
                   " differs: the file was written with " + a.substr(opt.size()) + ", this simulator has " +
                   b.substr(opt.size());
        return "file has '" + (ga ? a : "") + "', this simulator has '" + (gb ? b : "") + "'";
    }
}

/// Worlds per streamed chunk: about 8 MiB of snapshots, so each region of a
/// chunk moves in one copy (one device transfer, not one per world).
uint32_t chunk_worlds(uint64_t per_world, uint32_t num_worlds) {
    return uint32_t(
        std::max<uint64_t>(1, std::min<uint64_t>(num_worlds, (uint64_t(8) << 20) / std::max<uint64_t>(per_world, 1))));
}

/// What a checkpoint's fixed head and schema say, read and checked against
/// this simulator's sizes (`payload`) before any world is read.
struct CheckpointHead {
    std::string header;
    uint32_t crc = 0;        ///< CRC-32 of everything read so far
    uint64_t payload_at = 0; ///< file offset of world 0
};

CheckpointHead read_head(RegularFile& f, uint64_t payload, const std::string& ours,
                         const std::function<void(const std::string&)>& bad) {
    if (f.size() < kHead + 8 + 4) bad("truncated (" + std::to_string(f.size()) + " bytes)");
    char head[kHead];
    f.read_exact(head, kHead);
    if (std::memcmp(head, kMagic, 8) != 0) bad("not an Orrery checkpoint (bad magic)");
    uint32_t version, header_len;
    std::memcpy(&version, head + 8, 4);
    std::memcpy(&header_len, head + 12, 4);
    if (version != kCheckpointVersion)
        bad("format version " + std::to_string(version) + "; expected " + std::to_string(kCheckpointVersion));
    if (header_len > kMaxCheckpointHeader) bad("header length " + std::to_string(header_len) + " is too large");
    if (kHead + header_len + 8 + 4 > f.size()) bad("truncated inside the header");
    CheckpointHead h;
    h.header.resize(header_len);
    f.read_exact(h.header.data(), header_len);
    uint64_t stored_payload;
    f.read_exact(&stored_payload, 8);
    h.payload_at = kHead + header_len + 8;
    // A different simulator also has a different payload length: say which setting differs.
    if (stored_payload != payload && !first_difference(h.header, ours).empty())
        bad("written for a different simulator: " + first_difference(h.header, ours));
    if (stored_payload != payload)
        bad("payload length " + std::to_string(stored_payload) +
            "; expected num_worlds * snapshot bytes = " + std::to_string(payload));
    if (h.payload_at + payload + 4 != f.size())
        bad("truncated or padded: " + std::to_string(f.size()) + " bytes; the header promises " +
            std::to_string(h.payload_at + payload + 4));
    h.crc = crc_update(uint32_t(crc32(0L, Z_NULL, 0)), head, kHead);
    h.crc = crc_update(h.crc, h.header.data(), h.header.size());
    h.crc = crc_update(h.crc, &stored_payload, 8);
    return h;
}

} // namespace

void Simulator::copy_worlds_out(uint32_t first, uint32_t count, uint8_t* out) {
    const size_t per_world = snapshot_bytes();
    std::vector<uint8_t> staging;
    size_t at = 0; // the region's offset inside one world's snapshot
    for (const Region& r : regions_) {
        staging.resize(r.bytes_per_world * count);
        backend_->copy_to_host(staging.data(), r.base + r.bytes_per_world * first, staging.size());
        for (uint32_t i = 0; i < count; ++i)
            std::memcpy(out + per_world * i + at, staging.data() + r.bytes_per_world * i, r.bytes_per_world);
        at += r.bytes_per_world;
    }
}

void Simulator::copy_worlds_in(uint32_t first, uint32_t count, const uint8_t* in) {
    const size_t per_world = snapshot_bytes();
    std::vector<uint8_t> staging;
    size_t at = 0;
    for (const Region& r : regions_) {
        staging.resize(r.bytes_per_world * count);
        for (uint32_t i = 0; i < count; ++i)
            std::memcpy(staging.data() + r.bytes_per_world * i, in + per_world * i + at, r.bytes_per_world);
        backend_->copy_from_host(r.base + r.bytes_per_world * first, staging.data(), staging.size());
        at += r.bytes_per_world;
    }
}

void Simulator::save_checkpoint(const std::string& path) {
    const std::string header = schema_text();
    const uint64_t per_world = snapshot_bytes();
    AtomicWriter out(path);
    out.put(kMagic, 8);
    out.put_value(kCheckpointVersion);
    out.put_value(uint32_t(header.size()));
    out.put(header.data(), header.size());
    out.put_value(per_world * opts_.num_worlds);
    backend_->synchronize();
    const uint32_t chunk = chunk_worlds(per_world, opts_.num_worlds);
    std::vector<uint8_t> bytes(per_world * chunk);
    for (uint32_t w = 0; w < opts_.num_worlds; w += chunk) {
        const uint32_t n = std::min(chunk, opts_.num_worlds - w);
        copy_worlds_out(w, n, bytes.data());
        out.put(bytes.data(), per_world * n);
    }
    out.put_value(out.crc());
    out.commit();
}

void Simulator::load_checkpoint(const std::string& path) {
    auto bad = [&](const std::string& why) { throw Error("checkpoint '" + path + "' rejected: " + why); };
    const uint64_t per_world = snapshot_bytes();
    const std::string ours = schema_text();
    RegularFile f(path, "checkpoint", ~uint64_t(0)); // its exact size is checked by read_head
    CheckpointHead head = read_head(f, per_world * opts_.num_worlds, ours, bad);
    const std::string diff = first_difference(head.header, ours);
    const uint32_t chunk = chunk_worlds(per_world, opts_.num_worlds);
    std::vector<uint8_t> bytes(per_world * chunk);
    std::vector<uint32_t> world_crc(opts_.num_worlds);
    // Pass 1 writes nothing: checksum, schema and every world's fields. A
    // corrupt file is reported as corrupt even when it also breaks a field.
    uint32_t crc = head.crc;
    std::string field_error;
    for (uint32_t w = 0; w < opts_.num_worlds; w += chunk) {
        const uint32_t n = std::min(chunk, opts_.num_worlds - w);
        f.read_exact(bytes.data(), per_world * n);
        crc = crc_update(crc, bytes.data(), per_world * n);
        for (uint32_t i = 0; i < n; ++i) {
            world_crc[w + i] = crc_update(0, bytes.data() + per_world * i, per_world);
            if (diff.empty() && field_error.empty()) field_error = world_error(bytes.data() + per_world * i, w + i);
        }
    }
    uint32_t stored;
    f.read_exact(&stored, 4);
    if (crc != stored) bad("checksum mismatch (the file is corrupt)");
    if (!diff.empty()) bad("written for a different simulator: " + diff);
    if (!field_error.empty()) bad(field_error);
    // Pass 2: the same bytes into the worlds, a chunk at a time, each world
    // compared with its first-pass CRC and checked again before its chunk is written.
    f.seek(head.payload_at);
    backend_->synchronize();
    for (uint32_t w = 0; w < opts_.num_worlds; w += chunk) {
        const uint32_t n = std::min(chunk, opts_.num_worlds - w);
        f.read_exact(bytes.data(), per_world * n);
        for (uint32_t i = 0; i < n; ++i) {
            const uint8_t* world = bytes.data() + per_world * i;
            if (crc_update(0, world, per_world) != world_crc[w + i] || !world_error(world, w + i).empty())
                bad("the file changed while it was being loaded (at world " + std::to_string(w + i) +
                    "; the worlds before its chunk were loaded)");
        }
        copy_worlds_in(w, n, bytes.data());
    }
}

std::string Simulator::world_error(const uint8_t* bytes, uint32_t world) {
    try {
        check_snapshot(bytes);
    } catch (const Error& e) { return "world " + std::to_string(world) + ": " + e.what(); }
    return "";
}

} // namespace orrery
