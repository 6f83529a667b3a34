#version 450
// Instanced 2-D marks: one quad per instance, rotated and scaled, mapped from
// world units to clip space by the push-constant transform.
layout(location = 0) in vec4 i_rect;   // centre xy, half extents zw
layout(location = 1) in float i_angle;
layout(location = 2) in uint i_color;
layout(location = 3) in uint i_prim;
layout(push_constant) uniform Push { vec2 scale; vec2 offset; } pc;
layout(location = 0) out vec2 v_local;
layout(location = 1) flat out vec4 v_color;
layout(location = 2) flat out uint v_prim;
void main() {
    vec2 corner = vec2((gl_VertexIndex & 1) != 0 ? 1.0 : -1.0, (gl_VertexIndex & 2) != 0 ? 1.0 : -1.0);
    float c = cos(i_angle), s = sin(i_angle);
    vec2 local = corner * i_rect.zw;
    vec2 p = i_rect.xy + vec2(c * local.x - s * local.y, s * local.x + c * local.y);
    gl_Position = vec4(p * pc.scale + pc.offset, 0.0, 1.0);
    v_local = corner;
    v_color = unpackUnorm4x8(i_color);
    v_prim = i_prim;
}
