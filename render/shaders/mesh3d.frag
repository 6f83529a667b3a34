#version 450
// One sun: Lambert shading over an ambient floor, the sun's light blocked where
// the shadow map says something nearer the sun covers the point (3x3 samples
// soften the edge), and a grid drawn on floors.
layout(location = 0) in vec3 v_normal;
layout(location = 1) flat in vec4 v_color;
layout(location = 2) in vec3 v_world;
layout(location = 3) in vec4 v_light_pos;
layout(location = 4) flat in uint v_flags;
layout(set = 0, binding = 0) uniform sampler2DShadow shadow_map;
layout(set = 0, binding = 1) uniform Frame {
    mat4 view_proj;
    mat4 light_view_proj;
    vec4 light;
    vec4 params;
} frame;
layout(location = 0) out vec4 o_color;

float sunlit() {
    vec3 p = v_light_pos.xyz / v_light_pos.w;
    vec2 uv = p.xy * 0.5 + 0.5;
    if (any(lessThan(uv, vec2(0.0))) || any(greaterThan(uv, vec2(1.0))) || p.z > 1.0) return 1.0;
    vec2 texel = 1.0 / vec2(textureSize(shadow_map, 0));
    float lit = 0.0;
    for (int y = -1; y <= 1; ++y)
        for (int x = -1; x <= 1; ++x) lit += texture(shadow_map, vec3(uv + vec2(x, y) * texel, p.z));
    return lit / 9.0;
}

/// 1 on a grid line (minor lines every params.x, major every 5), else 0; lines stay about a pixel wide.
float grid() {
    float spacing = frame.params.x;
    vec2 g = v_world.xy / spacing;
    vec2 w = max(fwidth(g), vec2(1e-4));
    vec2 minor = abs(fract(g - 0.5) - 0.5) / w;
    vec2 major = abs(fract(g / 5.0 - 0.5) - 0.5) / max(fwidth(g / 5.0), vec2(1e-4));
    float line = 1.0 - clamp(min(minor.x, minor.y), 0.0, 1.0);
    float big = 1.0 - clamp(min(major.x, major.y) * 0.7, 0.0, 1.0);
    return max(0.5 * line, big);
}

void main() {
    vec3 n = normalize(v_normal);
    float direct = max(dot(n, normalize(frame.light.xyz)), 0.0);
    float k = 0.35 + 0.65 * direct * sunlit();
    vec3 rgb = v_color.rgb;
    if ((v_flags & 1u) != 0u) rgb = mix(rgb, rgb * 0.55, grid());
    o_color = vec4(rgb * k, v_color.a);
}
