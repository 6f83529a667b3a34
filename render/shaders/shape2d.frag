#version 450
// Shapes by signed distance in the quad's local [-1, 1] square, with one pixel
// of anti-aliasing; interiors keep the exact declared colour.
layout(location = 0) in vec2 v_local;
layout(location = 1) flat in vec4 v_color;
layout(location = 2) flat in uint v_prim;
layout(location = 0) out vec4 o_color;
void main() {
    if (v_prim == 0u) { o_color = v_color; return; }
    float d;
    if (v_prim == 1u) {
        d = length(v_local) - 1.0;
    } else if (v_prim == 2u) { // triangle pointing along +x
        vec2 n = normalize(vec2(0.8, 1.8));
        float edge = dot(n, vec2(1.0, 0.0));
        d = max(-0.8 - v_local.x, max(dot(n, v_local) - edge, dot(vec2(n.x, -n.y), v_local) - edge));
    } else {
        d = abs(length(v_local) - 0.8) - 0.2;
    }
    float aa = max(fwidth(d), 1e-4);
    float alpha = clamp(0.5 - d / aa, 0.0, 1.0);
    if (alpha <= 0.0) discard;
    o_color = vec4(v_color.rgb, v_color.a * alpha);
}
