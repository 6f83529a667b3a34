#version 450
// Instanced meshes for the 3-D view: scale (capsules: then stretch the two
// halves apart), yaw about +z, the body's orientation, translate, project with
// the camera (pass 0) or the sun (pass 1, the shadow map).
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in float a_seg;
layout(location = 3) in vec4 i_pos_yaw;
layout(location = 4) in vec3 i_scale;
layout(location = 5) in uint i_color;
layout(location = 6) in vec4 i_quat; // w, x, y, z
layout(location = 7) in float i_half_length;
layout(location = 8) in uint i_flags;
layout(set = 0, binding = 1) uniform Frame {
    mat4 view_proj;
    mat4 light_view_proj;
    vec4 light;
    vec4 params;
} frame;
layout(push_constant) uniform Push { uint pass; } pc;
layout(location = 0) out vec3 v_normal;
layout(location = 1) flat out vec4 v_color;
layout(location = 2) out vec3 v_world;
layout(location = 3) out vec4 v_light_pos;
layout(location = 4) flat out uint v_flags;

vec3 rotate(vec4 q, vec3 v) { return v + 2.0 * cross(q.yzw, cross(q.yzw, v) + q.x * v); }

void main() {
    float c = cos(i_pos_yaw.w), s = sin(i_pos_yaw.w);
    vec3 p = a_pos * i_scale + vec3(0.0, 0.0, a_seg * i_half_length);
    p = rotate(i_quat, vec3(c * p.x - s * p.y, s * p.x + c * p.y, p.z)) + i_pos_yaw.xyz;
    vec3 n = a_normal / max(i_scale, vec3(1e-6));
    v_normal = rotate(i_quat, normalize(vec3(c * n.x - s * n.y, s * n.x + c * n.y, n.z)));
    v_color = unpackUnorm4x8(i_color);
    v_world = p;
    v_light_pos = frame.light_view_proj * vec4(p + v_normal * frame.params.y, 1.0);
    v_flags = i_flags;
    gl_Position = (pc.pass == 1u ? frame.light_view_proj : frame.view_proj) * vec4(p, 1.0);
}
