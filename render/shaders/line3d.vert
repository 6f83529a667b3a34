#version 450
// Overlay segments of the 3-D view (contacts, bounds, velocities, rays), in world units.
layout(location = 0) in vec3 a_pos;
layout(location = 1) in uint a_color;
layout(set = 0, binding = 1) uniform Frame {
    mat4 view_proj;
    mat4 light_view_proj;
    vec4 light;
    vec4 params;
} frame;
layout(location = 0) flat out vec4 v_color;
void main() {
    v_color = unpackUnorm4x8(a_color);
    gl_Position = frame.view_proj * vec4(a_pos, 1.0);
}
