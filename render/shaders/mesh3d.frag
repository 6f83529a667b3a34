#version 450
// Lambert shading with an ambient floor, enough to read shapes in 3-D.
layout(location = 0) in vec3 v_normal;
layout(location = 1) flat in vec4 v_color;
layout(push_constant) uniform Push { mat4 view_proj; vec4 light; } pc;
layout(location = 0) out vec4 o_color;
void main() {
    float k = 0.35 + 0.65 * max(dot(normalize(v_normal), normalize(pc.light.xyz)), 0.0);
    o_color = vec4(v_color.rgb * k, v_color.a);
}
