#version 450
// Instanced meshes for the 3-D view: scale, yaw about +z, translate, project.
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in vec4 i_pos_yaw;
layout(location = 3) in vec3 i_scale;
layout(location = 4) in uint i_color;
layout(push_constant) uniform Push { mat4 view_proj; vec4 light; } pc;
layout(location = 0) out vec3 v_normal;
layout(location = 1) flat out vec4 v_color;
void main() {
    float c = cos(i_pos_yaw.w), s = sin(i_pos_yaw.w);
    vec3 p = a_pos * i_scale;
    p = vec3(c * p.x - s * p.y, s * p.x + c * p.y, p.z) + i_pos_yaw.xyz;
    vec3 n = a_normal / i_scale;
    v_normal = normalize(vec3(c * n.x - s * n.y, s * n.x + c * n.y, n.z));
    v_color = unpackUnorm4x8(i_color);
    gl_Position = pc.view_proj * vec4(p, 1.0);
}
