// Host side of convex hulls: the hull of a vertex list, its mass properties
// and principal frame, packed into the shared table (HullTable) add_to uploads.
//
// The construction is written here rather than taken from a library: hulls
// are tiny (<= 32 vertices), so the exhaustive method below (every plane
// through three vertices that has all the others on one side is a face plane)
// is short, exact about coplanar faces (they merge into one polygon, as the
// narrowphase wants), gives the same table on every machine, and adds no
// runtime dependency. It costs O(n^4) double operations: 1e6 at 32 vertices.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "physics/module.hpp"

namespace phys {
namespace {

constexpr float kMaxHullCoordinate = 1e6f; ///< m, on each axis of the given frame
constexpr double kMinHullSize = 1e-4;      ///< m: the farthest vertex from the vertices' mean
constexpr double kMaxHullSize = 1e5;

std::string short_number(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    return b;
}

struct D3 {
    double x, y, z;
};
D3 operator+(D3 a, D3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
D3 operator-(D3 a, D3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
D3 operator*(D3 a, double s) { return {a.x * s, a.y * s, a.z * s}; }
double dot3(D3 a, D3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
D3 cross3(D3 a, D3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
double len3(D3 a) { return std::sqrt(dot3(a, a)); }

struct Plane {
    D3 n;
    double d;
    std::vector<uint32_t> corners; ///< vertex numbers, counter-clockwise seen from outside
};

/// Eigenvalues and eigenvectors (columns of v) of symmetric 3x3 a, by cyclic Jacobi rotations.
void jacobi(double a[3][3], double v[3][3]) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) v[i][j] = i == j ? 1.0 : 0.0;
    for (int sweep = 0; sweep < 50; ++sweep) {
        double off = std::abs(a[0][1]) + std::abs(a[0][2]) + std::abs(a[1][2]);
        if (off <= 1e-300 || off < 1e-15 * (std::abs(a[0][0]) + std::abs(a[1][1]) + std::abs(a[2][2]))) return;
        for (int p = 0; p < 2; ++p)
            for (int q = p + 1; q < 3; ++q) {
                if (a[p][q] == 0.0) continue;
                double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
                double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < 3; ++k) { // a = J^T a J, v = v J
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq, a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; ++k) {
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk, a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; ++k) {
                    double vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = c * vkp - s * vkq, v[k][q] = s * vkp + c * vkq;
                }
            }
    }
}

/// Unit quaternion of rotation matrix r (columns: the body axes in the given frame).
Quat quat_of(const double r[3][3]) {
    double w, x, y, z, tr = r[0][0] + r[1][1] + r[2][2];
    if (tr > 0) {
        double s = std::sqrt(tr + 1.0) * 2;
        w = 0.25 * s, x = (r[2][1] - r[1][2]) / s, y = (r[0][2] - r[2][0]) / s, z = (r[1][0] - r[0][1]) / s;
    } else if (r[0][0] > r[1][1] && r[0][0] > r[2][2]) {
        double s = std::sqrt(1.0 + r[0][0] - r[1][1] - r[2][2]) * 2;
        w = (r[2][1] - r[1][2]) / s, x = 0.25 * s, y = (r[0][1] + r[1][0]) / s, z = (r[0][2] + r[2][0]) / s;
    } else if (r[1][1] > r[2][2]) {
        double s = std::sqrt(1.0 + r[1][1] - r[0][0] - r[2][2]) * 2;
        w = (r[0][2] - r[2][0]) / s, x = (r[0][1] + r[1][0]) / s, y = 0.25 * s, z = (r[1][2] + r[2][1]) / s;
    } else {
        double s = std::sqrt(1.0 + r[2][2] - r[0][0] - r[1][1]) * 2;
        w = (r[1][0] - r[0][1]) / s, x = (r[0][2] + r[2][0]) / s, y = (r[1][2] + r[2][1]) / s, z = 0.25 * s;
    }
    if (w < 0) w = -w, x = -x, y = -y, z = -z;
    return normalize(Quat{float(w), float(x), float(y), float(z)});
}

/// The face planes of points p (each a polygon of its corners), or an error message.
std::string faces_of(const std::vector<D3>& p, double eps, std::vector<Plane>& planes) {
    size_t n = p.size();
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j)
            for (size_t k = j + 1; k < n; ++k) {
                D3 c = cross3(p[j] - p[i], p[k] - p[i]);
                double l = len3(c);
                if (l <= eps * eps * 1e3) continue; // collinear
                D3 nrm = c * (1.0 / l);
                double d = dot3(nrm, p[i]);
                bool below = true, above = true;
                for (size_t m = 0; m < n; ++m) {
                    double s = dot3(nrm, p[m]) - d;
                    below = below && s <= eps, above = above && s >= -eps;
                }
                if (!below && !above) continue;
                if (!below) nrm = nrm * -1.0, d = -d;
                bool known = false;
                for (const Plane& q : planes)
                    known = known || (dot3(q.n, nrm) > 0.0 && std::abs(dot3(q.n, p[i]) - q.d) <= eps &&
                                      std::abs(dot3(q.n, p[j]) - q.d) <= eps && std::abs(dot3(q.n, p[k]) - q.d) <= eps);
                if (!known) planes.push_back({nrm, d, {}});
            }
    for (Plane& f : planes) {
        D3 mid{0, 0, 0};
        for (uint32_t m = 0; m < n; ++m)
            if (std::abs(dot3(f.n, p[m]) - f.d) <= eps) f.corners.push_back(m), mid = mid + p[m];
        mid = mid * (1.0 / double(f.corners.size()));
        D3 u = p[f.corners[0]] - mid;
        u = u * (1.0 / len3(u));
        D3 v = cross3(f.n, u);
        auto angle = [&](uint32_t m) { return std::atan2(dot3(p[m] - mid, v), dot3(p[m] - mid, u)); };
        std::sort(f.corners.begin(), f.corners.end(), [&](uint32_t a, uint32_t b) { return angle(a) < angle(b); });
        size_t c = f.corners.size();
        for (size_t k = 0; k < c; ++k) { // every corner must turn left (a strictly convex polygon)
            D3 a = p[f.corners[(k + c - 1) % c]], b = p[f.corners[k]], e = p[f.corners[(k + 1) % c]];
            if (dot3(cross3(b - a, e - b), f.n) <= eps * eps * 1e3)
                return "vertex " + std::to_string(f.corners[k]) +
                       " lies on an edge or face of the hull of the others; give only the hull's corners";
        }
        if (c > kMaxFaceCorners)
            return "has a face of " + std::to_string(c) + " corners; at most " + std::to_string(kMaxFaceCorners);
    }
    for (uint32_t m = 0; m < n; ++m) {
        bool on = false;
        for (const Plane& f : planes) on = on || std::abs(dot3(f.n, p[m]) - f.d) <= eps;
        if (!on)
            return "vertex " + std::to_string(m) +
                   " lies inside the hull of the others (the shape is not convex); give only the hull's corners";
    }
    return "";
}

/// Volume, centroid (relative to r) and second moment about the centroid of the
/// solid bounded by `planes`, by tetrahedra from r (density 1).
void moments_of(const std::vector<D3>& p, const std::vector<Plane>& planes, D3 r, double& volume, D3& centroid,
                double cov[3][3]) {
    volume = 0.0;
    centroid = {0, 0, 0};
    double c[3][3] = {};
    for (const Plane& f : planes)
        for (size_t k = 1; k + 1 < f.corners.size(); ++k) {
            D3 a = p[f.corners[0]] - r, b = p[f.corners[k]] - r, e = p[f.corners[k + 1]] - r;
            double det = dot3(a, cross3(b, e)); // six times the tetrahedron's volume
            volume += det / 6.0;
            centroid = centroid + (a + b + e) * (det / 24.0);
            D3 s = a + b + e;
            const D3 v[4] = {a, b, e, s};
            for (const D3& w : v) { // integral of x x^T: det / 120 (sum v v^T + s s^T)
                double q[3] = {w.x, w.y, w.z};
                for (int i = 0; i < 3; ++i)
                    for (int j = 0; j < 3; ++j) c[i][j] += det / 120.0 * q[i] * q[j];
            }
        }
    centroid = centroid * (1.0 / volume);
    double g[3] = {centroid.x, centroid.y, centroid.z};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) cov[i][j] = c[i][j] - volume * g[i] * g[j];
}

/// Orders the principal axes (columns of v) nearest the given axes, pointing
/// their way, right-handed, so a hull symmetric about its given axes keeps them.
void align_axes(double v[3][3], double moments[3]) {
    double out[3][3], m[3];
    bool used[3] = {false, false, false};
    for (int axis = 0; axis < 3; ++axis) {
        int best = -1;
        for (int col = 0; col < 3; ++col)
            if (!used[col] && (best < 0 || std::abs(v[axis][col]) > std::abs(v[axis][best]) + 1e-12)) best = col;
        used[best] = true;
        double sign = v[axis][best] < 0 ? -1.0 : 1.0;
        for (int k = 0; k < 3; ++k) out[k][axis] = sign * v[k][best];
        m[axis] = moments[best];
    }
    D3 x{out[0][0], out[1][0], out[2][0]}, y{out[0][1], out[1][1], out[2][1]}, z{out[0][2], out[1][2], out[2][2]};
    if (dot3(cross3(x, y), z) < 0)
        for (int k = 0; k < 3; ++k) out[k][2] = -out[k][2];
    for (int i = 0; i < 3; ++i) {
        moments[i] = m[i];
        for (int j = 0; j < 3; ++j) v[i][j] = out[i][j];
    }
}

/// Appends hull `given` to `t`, or returns what is wrong with it.
std::string add_hull(HullTable& t, const std::vector<Vec3>& given) {
    if (given.size() < 4 || given.size() > kMaxHullVertices)
        return "has " + std::to_string(given.size()) + " vertices; expected 4.." + std::to_string(kMaxHullVertices);
    std::vector<D3> p;
    D3 mean{0, 0, 0};
    for (size_t i = 0; i < given.size(); ++i) {
        const Vec3& v = given[i];
        if (!std::isfinite(v.x) || !std::isfinite(v.y) || !std::isfinite(v.z))
            return "vertex " + std::to_string(i) + " is not finite";
        if (std::max({std::abs(v.x), std::abs(v.y), std::abs(v.z)}) > kMaxHullCoordinate)
            return "vertex " + std::to_string(i) + " lies beyond 1e6 m of the origin on an axis";
        p.push_back({v.x, v.y, v.z});
        mean = mean + p.back() * (1.0 / double(given.size()));
    }
    double scale = 0.0;
    for (const D3& q : p) scale = std::max(scale, len3(q - mean));
    // Mass properties grow as size^5 (inertia): outside this range they leave a float.
    if (!(scale >= kMinHullSize && scale <= kMaxHullSize))
        return "reaches " + short_number(scale) + " m from its vertices' mean; expected 1e-4 to 1e5 m";
    double eps = 1e-6 * scale;
    for (size_t i = 0; i < p.size(); ++i)
        for (size_t j = i + 1; j < p.size(); ++j)
            if (len3(p[i] - p[j]) <= 10 * eps)
                return "vertices " + std::to_string(i) + " and " + std::to_string(j) + " coincide";
    double thickest = 0.0; // the hull's extent off the widest plane through three vertices
    for (size_t i = 0; i < p.size(); ++i)
        for (size_t j = i + 1; j < p.size(); ++j)
            for (size_t k = j + 1; k < p.size(); ++k) {
                D3 c = cross3(p[j] - p[i], p[k] - p[i]);
                if (len3(c) <= 1e-6 * scale * scale) continue;
                for (const D3& q : p) thickest = std::max(thickest, std::abs(dot3(c, q - p[i])) / len3(c));
            }
    if (thickest <= 1e-4 * scale) return "has coplanar vertices (no volume); a hull needs 4 not in one plane";
    std::vector<Plane> planes;
    std::string why = faces_of(p, eps, planes);
    if (!why.empty()) return why;
    // The width the test above estimates, measured: the least depth of the
    // hull behind any face. A nearly flat set passes that test through a
    // nearly collinear triple and comes back as two faces back to back
    // (Euler's formula holds for them); found by fuzz_hull_build.
    double width = planes.size() < 4 ? 0.0 : 1e300;
    for (const Plane& f : planes) {
        double depth = 0.0;
        for (const D3& q : p) depth = std::max(depth, f.d - dot3(f.n, q));
        width = std::min(width, depth);
    }
    if (width <= 1e-4 * scale) return "has coplanar vertices (no volume); a hull needs 4 not in one plane";

    double volume, cov[3][3], axes[3][3];
    D3 centroid;
    moments_of(p, planes, mean, volume, centroid, cov);
    centroid = centroid + mean;
    double inertia[3][3];
    double trace = cov[0][0] + cov[1][1] + cov[2][2];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) inertia[i][j] = (i == j ? trace : 0.0) - cov[i][j];
    jacobi(inertia, axes);
    double moments[3] = {inertia[0][0], inertia[1][1], inertia[2][2]};
    align_axes(axes, moments);
    auto to_body = [&](D3 v) { // R^T v: given-frame direction into the body frame
        return D3{axes[0][0] * v.x + axes[1][0] * v.y + axes[2][0] * v.z,
                  axes[0][1] * v.x + axes[1][1] * v.y + axes[2][1] * v.z,
                  axes[0][2] * v.x + axes[1][2] * v.y + axes[2][2] * v.z};
    };
    auto f3 = [](D3 v) { return Vec3{float(v.x), float(v.y), float(v.z)}; };

    HullInfo h{};
    h.first_point = uint32_t(t.points.size());
    h.num_vertices = uint32_t(p.size());
    for (const D3& q : p) {
        D3 b = to_body(q - centroid);
        t.points.push_back(f3(b));
        h.bound = std::max(h.bound, float(len3(b)));
    }
    h.bound *= 1.0f + 1e-6f; // rounding never leaves a vertex outside it
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    for (const Plane& f : planes)
        for (size_t k = 0; k < f.corners.size(); ++k) {
            uint32_t a = f.corners[k], b = f.corners[(k + 1) % f.corners.size()];
            std::pair<uint32_t, uint32_t> e{std::min(a, b), std::max(a, b)};
            if (std::find(edges.begin(), edges.end(), e) == edges.end()) edges.push_back(e);
        }
    if (p.size() + planes.size() != edges.size() + 2)
        return "is not a closed convex polyhedron (Euler's formula fails)";
    std::vector<D3> dirs;
    std::vector<uint32_t> edge_dir;
    for (auto [a, b] : edges) {
        D3 d = to_body(p[b] - p[a]);
        d = d * (1.0 / len3(d));
        double lead = std::abs(d.x) > 1e-9 ? d.x : (std::abs(d.y) > 1e-9 ? d.y : d.z);
        if (lead < 0) d = d * -1.0; // one sign per direction
        uint32_t k = 0;
        while (k < dirs.size() && len3(cross3(dirs[k], d)) > 1e-6) ++k;
        if (k == dirs.size()) dirs.push_back(d);
        edge_dir.push_back(k);
    }
    h.num_dirs = uint32_t(dirs.size());
    for (const D3& d : dirs) t.points.push_back(f3(d));
    h.first_face = uint32_t(t.faces.size());
    h.num_faces = uint32_t(planes.size());
    for (const Plane& f : planes) {
        D3 n = to_body(f.n);
        HullFace hf{f3(n), float(f.d - dot3(f.n, centroid)), uint32_t(t.indices.size()), uint32_t(f.corners.size())};
        t.faces.push_back(hf);
        for (uint32_t c : f.corners) t.indices.push_back(c);
    }
    h.first_edge = uint32_t(t.indices.size());
    h.num_edges = uint32_t(edges.size());
    for (size_t e = 0; e < edges.size(); ++e) {
        t.indices.push_back(edges[e].first);
        t.indices.push_back(edges[e].second);
        t.indices.push_back(edge_dir[e]);
    }
    h.volume = float(volume);
    h.inertia = {float(moments[0]), float(moments[1]), float(moments[2])};
    h.offset = f3(centroid);
    h.frame = quat_of(axes);
    auto positive = [](float v) { return std::isfinite(v) && v > 0.0f; };
    if (!positive(h.volume) || !positive(h.inertia.x) || !positive(h.inertia.y) || !positive(h.inertia.z))
        return "has mass properties a float cannot hold (volume " + short_number(volume) + " m^3)";
    t.info.push_back(h);
    return "";
}

} // namespace

HullSet HullTable::view() const {
    return {{info.data(), uint32_t(info.size())},
            {points.data(), uint32_t(points.size())},
            {faces.data(), uint32_t(faces.size())},
            {indices.data(), uint32_t(indices.size())}};
}

HullTable build_hulls(const std::vector<std::vector<Vec3>>& hulls, const std::string& field) {
    HullTable t;
    for (size_t i = 0; i < hulls.size(); ++i) {
        std::string why = add_hull(t, hulls[i]);
        if (!why.empty()) throw orrery::Error(field + "[" + std::to_string(i) + "] " + why);
    }
    return t;
}

std::vector<Vec3> wedge_vertices(float width, float length, float height) {
    float x = 0.5f * width, y = 0.5f * length;
    return {{-x, -y, 0.0f}, {x, -y, 0.0f}, {-x, y, 0.0f}, {x, y, 0.0f}, {-x, y, height}, {x, y, height}};
}

} // namespace phys
