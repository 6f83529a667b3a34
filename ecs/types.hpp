#pragma once
// Compile-time identity of components and archetypes. An env lists its
// components once (ORRERY_COMPONENTS) and its archetypes once
// (ORRERY_ARCHETYPES); ids are positions in those lists, identical under
// g++, nvcc and NVRTC because they come from the same text. A module (a
// namespace of reusable components, such as physics) uses the same macros; an
// env splices the module's lists in front of its own, so a module component's
// id is the same in every env that composes it, and a static_assert proves it.

#include "ecs/base.hpp"

namespace orrery {

/// A compile-time list of types.
template <class... Ts> struct List { static constexpr uint32_t size = sizeof...(Ts); };

namespace detail {
template <class T, class L> struct IndexOf;
template <class T, class... Rest> struct IndexOf<T, List<T, Rest...>> { static constexpr uint32_t value = 0; };
template <class T, class U, class... Rest> struct IndexOf<T, List<U, Rest...>> {
    static constexpr uint32_t value = 1 + IndexOf<T, List<Rest...>>::value;
};
template <class A, class B> struct IsSame { static constexpr bool value = false; };
template <class A> struct IsSame<A, A> { static constexpr bool value = true; };
template <class T, class L> struct Contains;
template <class T> struct Contains<T, List<>> { static constexpr bool value = false; };
template <class T, class U, class... Rest> struct Contains<T, List<U, Rest...>> {
    static constexpr bool value = IsSame<T, U>::value || Contains<T, List<Rest...>>::value;
};
template <class... Ls> struct Concat;
template <> struct Concat<> { using type = List<>; };
template <class... A> struct Concat<List<A...>> { using type = List<A...>; };
template <class... A, class... B, class... Rest> struct Concat<List<A...>, List<B...>, Rest...> {
    using type = typename Concat<List<A..., B...>, Rest...>::type;
};
template <class T> struct AsList { using type = List<T>; };
template <class... Ts> struct AsList<List<Ts...>> { using type = List<Ts...>; };
template <class T> struct RemoveRef { using type = T; };
template <class T> struct RemoveRef<T&> { using type = T; };
template <class T> struct RemoveRef<const T&> { using type = T; };
template <class T> struct RemoveRef<const T> { using type = T; };
} // namespace detail

/// The types given, with every List among them (a module's component list, an
/// archetype fragment) spliced in place: Flat<phys::OrreryComponents, Grab> is
/// phys's components followed by Grab.
template <class... Ts> using Flat = typename detail::Concat<typename detail::AsList<Ts>::type...>::type;

/// Component id of T: its position in the ORRERY_COMPONENTS list of T's own
/// namespace (the env's, or the module's that declares T).
template <class T>
constexpr uint32_t component_id = detail::IndexOf<T, decltype(orrery_components_of(static_cast<T*>(nullptr)))>::value;

/// Archetype id of A: its position in the env's ORRERY_ARCHETYPES list.
template <class A>
constexpr uint32_t archetype_id = detail::IndexOf<A, decltype(orrery_archetypes_of(static_cast<A*>(nullptr)))>::value;

namespace detail {
/// True when each component's id (found through its own namespace's list) is
/// its position in `L`: module lists come first, each after the modules it is
/// built on, and no component appears twice.
template <class... Ts> constexpr bool component_ids_match(List<Ts...>) {
    uint32_t i = 0;
    bool ok = true;
    ((ok = ok && component_id<Ts> == i++), ...);
    return ok;
}
template <class... Ts> constexpr bool archetype_ids_match(List<Ts...>) {
    uint32_t i = 0;
    bool ok = true;
    ((ok = ok && archetype_id<Ts> == i++), ...);
    return ok;
}
} // namespace detail

/// True when archetype A declares component T.
template <class A, class T> constexpr bool has_component = detail::Contains<T, typename A::Components>::value;

/// Marks a component whose per-row size is set at registration (for example an
/// observation of layout-dependent shape). Systems see it as Array<T>.
template <class E> struct ArrayOf {
    using Element = E;
    static constexpr bool kIsArray = true;
};

} // namespace orrery

// --- macro plumbing: apply M(arg) to each of up to 64 arguments -------------
#define ORRERY_EXPAND(x) x
#define ORRERY_FE_1(M, a) M(a)
#define ORRERY_FE_2(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_1(M, __VA_ARGS__))
#define ORRERY_FE_3(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_2(M, __VA_ARGS__))
#define ORRERY_FE_4(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_3(M, __VA_ARGS__))
#define ORRERY_FE_5(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_4(M, __VA_ARGS__))
#define ORRERY_FE_6(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_5(M, __VA_ARGS__))
#define ORRERY_FE_7(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_6(M, __VA_ARGS__))
#define ORRERY_FE_8(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_7(M, __VA_ARGS__))
#define ORRERY_FE_9(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_8(M, __VA_ARGS__))
#define ORRERY_FE_10(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_9(M, __VA_ARGS__))
#define ORRERY_FE_11(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_10(M, __VA_ARGS__))
#define ORRERY_FE_12(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_11(M, __VA_ARGS__))
#define ORRERY_FE_13(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_12(M, __VA_ARGS__))
#define ORRERY_FE_14(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_13(M, __VA_ARGS__))
#define ORRERY_FE_15(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_14(M, __VA_ARGS__))
#define ORRERY_FE_16(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_15(M, __VA_ARGS__))
#define ORRERY_FE_17(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_16(M, __VA_ARGS__))
#define ORRERY_FE_18(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_17(M, __VA_ARGS__))
#define ORRERY_FE_19(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_18(M, __VA_ARGS__))
#define ORRERY_FE_20(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_19(M, __VA_ARGS__))
#define ORRERY_FE_21(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_20(M, __VA_ARGS__))
#define ORRERY_FE_22(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_21(M, __VA_ARGS__))
#define ORRERY_FE_23(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_22(M, __VA_ARGS__))
#define ORRERY_FE_24(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_23(M, __VA_ARGS__))
#define ORRERY_FE_25(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_24(M, __VA_ARGS__))
#define ORRERY_FE_26(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_25(M, __VA_ARGS__))
#define ORRERY_FE_27(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_26(M, __VA_ARGS__))
#define ORRERY_FE_28(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_27(M, __VA_ARGS__))
#define ORRERY_FE_29(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_28(M, __VA_ARGS__))
#define ORRERY_FE_30(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_29(M, __VA_ARGS__))
#define ORRERY_FE_31(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_30(M, __VA_ARGS__))
#define ORRERY_FE_32(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_31(M, __VA_ARGS__))
#define ORRERY_FE_33(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_32(M, __VA_ARGS__))
#define ORRERY_FE_34(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_33(M, __VA_ARGS__))
#define ORRERY_FE_35(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_34(M, __VA_ARGS__))
#define ORRERY_FE_36(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_35(M, __VA_ARGS__))
#define ORRERY_FE_37(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_36(M, __VA_ARGS__))
#define ORRERY_FE_38(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_37(M, __VA_ARGS__))
#define ORRERY_FE_39(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_38(M, __VA_ARGS__))
#define ORRERY_FE_40(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_39(M, __VA_ARGS__))
#define ORRERY_FE_41(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_40(M, __VA_ARGS__))
#define ORRERY_FE_42(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_41(M, __VA_ARGS__))
#define ORRERY_FE_43(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_42(M, __VA_ARGS__))
#define ORRERY_FE_44(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_43(M, __VA_ARGS__))
#define ORRERY_FE_45(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_44(M, __VA_ARGS__))
#define ORRERY_FE_46(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_45(M, __VA_ARGS__))
#define ORRERY_FE_47(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_46(M, __VA_ARGS__))
#define ORRERY_FE_48(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_47(M, __VA_ARGS__))
#define ORRERY_FE_49(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_48(M, __VA_ARGS__))
#define ORRERY_FE_50(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_49(M, __VA_ARGS__))
#define ORRERY_FE_51(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_50(M, __VA_ARGS__))
#define ORRERY_FE_52(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_51(M, __VA_ARGS__))
#define ORRERY_FE_53(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_52(M, __VA_ARGS__))
#define ORRERY_FE_54(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_53(M, __VA_ARGS__))
#define ORRERY_FE_55(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_54(M, __VA_ARGS__))
#define ORRERY_FE_56(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_55(M, __VA_ARGS__))
#define ORRERY_FE_57(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_56(M, __VA_ARGS__))
#define ORRERY_FE_58(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_57(M, __VA_ARGS__))
#define ORRERY_FE_59(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_58(M, __VA_ARGS__))
#define ORRERY_FE_60(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_59(M, __VA_ARGS__))
#define ORRERY_FE_61(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_60(M, __VA_ARGS__))
#define ORRERY_FE_62(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_61(M, __VA_ARGS__))
#define ORRERY_FE_63(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_62(M, __VA_ARGS__))
#define ORRERY_FE_64(M, a, ...) M(a) ORRERY_EXPAND(ORRERY_FE_63(M, __VA_ARGS__))
#define ORRERY_FE_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, \
                       _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, _33, _34, _35, _36, _37, _38, _39, _40,  \
                       _41, _42, _43, _44, _45, _46, _47, _48, _49, _50, _51, _52, _53, _54, _55, _56, _57, _58, _59,  \
                       _60, _61, _62, _63, _64, NAME, ...)                                                             \
    NAME
#define ORRERY_FOR_EACH(M, ...)                                                                                        \
    ORRERY_EXPAND(ORRERY_FE_PICK(                                                                                      \
        __VA_ARGS__, ORRERY_FE_64, ORRERY_FE_63, ORRERY_FE_62, ORRERY_FE_61, ORRERY_FE_60, ORRERY_FE_59, ORRERY_FE_58, \
        ORRERY_FE_57, ORRERY_FE_56, ORRERY_FE_55, ORRERY_FE_54, ORRERY_FE_53, ORRERY_FE_52, ORRERY_FE_51,              \
        ORRERY_FE_50, ORRERY_FE_49, ORRERY_FE_48, ORRERY_FE_47, ORRERY_FE_46, ORRERY_FE_45, ORRERY_FE_44,              \
        ORRERY_FE_43, ORRERY_FE_42, ORRERY_FE_41, ORRERY_FE_40, ORRERY_FE_39, ORRERY_FE_38, ORRERY_FE_37,              \
        ORRERY_FE_36, ORRERY_FE_35, ORRERY_FE_34, ORRERY_FE_33, ORRERY_FE_32, ORRERY_FE_31, ORRERY_FE_30,              \
        ORRERY_FE_29, ORRERY_FE_28, ORRERY_FE_27, ORRERY_FE_26, ORRERY_FE_25, ORRERY_FE_24, ORRERY_FE_23,              \
        ORRERY_FE_22, ORRERY_FE_21, ORRERY_FE_20, ORRERY_FE_19, ORRERY_FE_18, ORRERY_FE_17, ORRERY_FE_16,              \
        ORRERY_FE_15, ORRERY_FE_14, ORRERY_FE_13, ORRERY_FE_12, ORRERY_FE_11, ORRERY_FE_10, ORRERY_FE_9, ORRERY_FE_8,  \
        ORRERY_FE_7, ORRERY_FE_6, ORRERY_FE_5, ORRERY_FE_4, ORRERY_FE_3, ORRERY_FE_2, ORRERY_FE_1)(M, __VA_ARGS__))

#define ORRERY_DECLARE_COMPONENT_OF(T) OrreryComponents orrery_components_of(T*);
#define ORRERY_DECLARE_ARCHETYPE_OF(T) OrreryArchetypes orrery_archetypes_of(T*);

/// Lists an env's (or a module's) components, in id order. Use once, inside the
/// namespace, after the component structs. A module's list may lead:
/// ORRERY_COMPONENTS(phys::OrreryComponents, Grab, Obs) gives phys's components
/// the ids they have in phys, then Grab and Obs the next ones. Ids that would
/// collide (a module list not first, two unrelated modules, a component listed
/// twice) fail to compile.
#define ORRERY_COMPONENTS(...)                                                                                         \
    using OrreryComponents = ::orrery::Flat<__VA_ARGS__>;                                                              \
    ORRERY_FOR_EACH(ORRERY_DECLARE_COMPONENT_OF, __VA_ARGS__)                                                          \
    static_assert(::orrery::detail::component_ids_match(OrreryComponents{}),                                           \
                  "component ids collide: list each module's OrreryComponents first (a module "                        \
                  "built on another includes it), and no component twice");                                            \
    inline constexpr const char* kOrreryComponentNames = #__VA_ARGS__

/// A named group of components that archetypes include whole (a module's
/// "rigid body" fragment): ORRERY_BUNDLE(RigidBody, Pose, Velocity, Mass);
#define ORRERY_BUNDLE(Name, ...) using Name = ::orrery::List<__VA_ARGS__>

/// Declares archetype `Name` holding the listed components and bundles.
/// Example: ORRERY_ARCHETYPE(Agent, Position, Velocity, Obs);
#define ORRERY_ARCHETYPE(Name, ...)                                                                                    \
    struct Name {                                                                                                      \
        using Components = ::orrery::Flat<__VA_ARGS__>;                                                                \
        static constexpr const char* kName = #Name;                                                                    \
    }

/// Lists an env's (or module's) archetypes, in id order; a module's
/// OrreryArchetypes may lead, as with ORRERY_COMPONENTS.
#define ORRERY_ARCHETYPES(...)                                                                                         \
    using OrreryArchetypes = ::orrery::Flat<__VA_ARGS__>;                                                              \
    ORRERY_FOR_EACH(ORRERY_DECLARE_ARCHETYPE_OF, __VA_ARGS__)                                                          \
    static_assert(::orrery::detail::archetype_ids_match(OrreryArchetypes{}),                                           \
                  "archetype ids collide: list each module's OrreryArchetypes first, and no "                          \
                  "archetype twice");                                                                                  \
    inline constexpr const char* kOrreryArchetypeNames = #__VA_ARGS__
