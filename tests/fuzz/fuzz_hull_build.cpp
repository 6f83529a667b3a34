// Fuzzes phys::build_hulls (physics/hull_build.cpp), the one host parser of
// hull vertex lists (PhysicsOptions::hulls): any list must give a hull table
// or an orrery::Error, never a crash or a hang, and an accepted table must be
// what the narrowphase may read blindly: every index in range, every number
// finite, a positive volume and inertia, unit normals and frame.
//
// Input: byte 0 picks the form (bit 0: grid, bit 1: two hulls, the list cut in
// half). Floats: the rest as little-endian float triples. Grid: byte 1 is a
// power of two (2^(byte - 128), kept within 2^-40..2^40) and each following
// byte a coordinate step from -128 to 127 of it, so coplanar faces, collinear
// and coincident vertices, and tiny or huge hulls come often.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/error.hpp"
#include "physics/module.hpp"

namespace {

using phys::Vec3;

[[noreturn]] void finding(const char* what, size_t hull) {
    std::fprintf(stderr, "fuzz_hull_build: hull %zu: %s\n", hull, what);
    std::abort();
}

bool finite(Vec3 v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); }
float norm(Vec3 v) { return std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z); }

/// Aborts unless table `t` is one the narrowphase and mass code may read without checks.
void check_table(const phys::HullTable& t, size_t hulls) {
    if (t.info.size() != hulls) finding("the table has another number of hulls than given", 0);
    for (size_t i = 0; i < t.info.size(); ++i) {
        const phys::HullInfo& h = t.info[i];
        if (h.num_vertices < 4 || h.num_vertices > phys::kMaxHullVertices) finding("vertex count out of 4..32", i);
        if (size_t(h.first_point) + h.num_vertices + h.num_dirs > t.points.size()) finding("points out of range", i);
        if (size_t(h.first_face) + h.num_faces > t.faces.size() || h.num_faces < 4) finding("faces out of range", i);
        if (size_t(h.first_edge) + 3 * size_t(h.num_edges) > t.indices.size()) finding("edges out of range", i);
        if (!(h.volume > 0.0f) || !std::isfinite(h.volume)) finding("volume not finite and positive", i);
        if (!(h.bound > 0.0f) || !std::isfinite(h.bound)) finding("bound not finite and positive", i);
        if (!(h.inertia.x > 0.0f && h.inertia.y > 0.0f && h.inertia.z > 0.0f) || !finite(h.inertia))
            finding("inertia not finite and positive", i);
        if (!finite(h.offset)) finding("offset not finite", i);
        float q =
            std::sqrt(h.frame.w * h.frame.w + h.frame.x * h.frame.x + h.frame.y * h.frame.y + h.frame.z * h.frame.z);
        if (!(std::fabs(q - 1.0f) < 1e-4f)) finding("frame not a unit quaternion", i);
        for (uint32_t k = 0; k < h.num_vertices + h.num_dirs; ++k) {
            const Vec3 p = t.points[h.first_point + k];
            if (!finite(p)) finding("a vertex or direction is not finite", i);
            if (k < h.num_vertices && norm(p) > h.bound) finding("a vertex lies outside the bound", i);
            if (k >= h.num_vertices && !(std::fabs(norm(p) - 1.0f) < 1e-4f)) finding("a direction is not unit", i);
        }
        for (uint32_t f = 0; f < h.num_faces; ++f) {
            const phys::HullFace& F = t.faces[h.first_face + f];
            if (!finite(F.n) || !std::isfinite(F.d) || !(std::fabs(norm(F.n) - 1.0f) < 1e-4f))
                finding("a face plane is not finite with a unit normal", i);
            if (F.count < 3 || F.count > phys::kMaxFaceCorners || size_t(F.first) + F.count > t.indices.size())
                finding("face corners out of range", i);
            for (uint32_t c = 0; c < F.count; ++c)
                if (t.indices[F.first + c] >= h.num_vertices) finding("a face corner names no vertex", i);
        }
        for (uint32_t e = 0; e < h.num_edges; ++e) {
            const uint32_t at = h.first_edge + 3 * e;
            if (t.indices[at] >= h.num_vertices || t.indices[at + 1] >= h.num_vertices ||
                t.indices[at + 2] >= h.num_dirs)
                finding("an edge names no vertex or direction", i);
        }
    }
}

std::vector<Vec3> vertices(const uint8_t* data, size_t size) {
    std::vector<Vec3> out;
    if (size == 0) return out;
    if (data[0] & 1) { // grid
        if (size < 2) return out;
        int e = int(data[1]) - 128;
        e = e < -40 ? -40 : (e > 40 ? 40 : e);
        const float step = std::ldexp(1.0f, e);
        for (size_t i = 2; i + 3 <= size; i += 3)
            out.push_back(
                {float(int8_t(data[i])) * step, float(int8_t(data[i + 1])) * step, float(int8_t(data[i + 2])) * step});
    } else {
        for (size_t i = 1; i + 12 <= size; i += 12) {
            float v[3];
            std::memcpy(v, data + i, 12);
            out.push_back({v[0], v[1], v[2]});
        }
    }
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<Vec3> all = vertices(data, size);
    if (all.size() > 80) return 0; // two hulls of up to 40: past the limit of 32 is still tried
    std::vector<std::vector<Vec3>> hulls;
    if (size && (data[0] & 2)) {
        hulls.emplace_back(all.begin(), all.begin() + long(all.size() / 2));
        hulls.emplace_back(all.begin() + long(all.size() / 2), all.end());
    } else {
        hulls.push_back(all);
    }
    phys::HullTable t;
    try {
        t = phys::build_hulls(hulls, "hulls");
    } catch (const orrery::Error& e) {
        if (std::strncmp(e.what(), "hulls[", 6) != 0) finding("the error does not name the hull", 0);
        return 0;
    }
    check_table(t, hulls.size());
    return 0;
}
