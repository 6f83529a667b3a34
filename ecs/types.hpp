#pragma once
// Compile-time identity of components and archetypes. An env lists its
// components once (ORRERY_COMPONENTS) and its archetypes once
// (ORRERY_ARCHETYPES); ids are positions in those lists, identical under
// g++, nvcc and NVRTC because they come from the same text.

#include "ecs/base.hpp"

namespace orrery {

/// A compile-time list of types.
template <class... Ts> struct List {
    static constexpr uint32_t size = sizeof...(Ts);
};

namespace detail {
template <class T, class L> struct IndexOf;
template <class T, class... Rest> struct IndexOf<T, List<T, Rest...>> {
    static constexpr uint32_t value = 0;
};
template <class T, class U, class... Rest> struct IndexOf<T, List<U, Rest...>> {
    static constexpr uint32_t value = 1 + IndexOf<T, List<Rest...>>::value;
};
template <class A, class B> struct IsSame {
    static constexpr bool value = false;
};
template <class A> struct IsSame<A, A> {
    static constexpr bool value = true;
};
template <class T, class L> struct Contains;
template <class T> struct Contains<T, List<>> {
    static constexpr bool value = false;
};
template <class T, class U, class... Rest> struct Contains<T, List<U, Rest...>> {
    static constexpr bool value = IsSame<T, U>::value || Contains<T, List<Rest...>>::value;
};
template <class T> struct RemoveRef { using type = T; };
template <class T> struct RemoveRef<T&> { using type = T; };
template <class T> struct RemoveRef<const T&> { using type = T; };
template <class T> struct RemoveRef<const T> { using type = T; };
} // namespace detail

/// Component id of T: its position in the env's ORRERY_COMPONENTS list.
template <class T>
constexpr uint32_t component_id =
    detail::IndexOf<T, decltype(orrery_components_of(static_cast<T*>(nullptr)))>::value;

/// Archetype id of A: its position in the env's ORRERY_ARCHETYPES list.
template <class A>
constexpr uint32_t archetype_id =
    detail::IndexOf<A, decltype(orrery_archetypes_of(static_cast<A*>(nullptr)))>::value;

/// True when archetype A declares component T.
template <class A, class T>
constexpr bool has_component = detail::Contains<T, typename A::Components>::value;

/// Marks a component whose per-row size is set at registration (for example an
/// observation of layout-dependent shape). Systems see it as Array<T>.
template <class E> struct ArrayOf {
    using Element = E;
    static constexpr bool kIsArray = true;
};

} // namespace orrery

// --- macro plumbing: apply M(arg) to each of up to 32 arguments -------------
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
#define ORRERY_FE_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16,    \
                       _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, \
                       _32, NAME, ...)                                                            \
    NAME
#define ORRERY_FOR_EACH(M, ...)                                                                   \
    ORRERY_EXPAND(ORRERY_FE_PICK(__VA_ARGS__, ORRERY_FE_32, ORRERY_FE_31, ORRERY_FE_30,           \
                                 ORRERY_FE_29, ORRERY_FE_28, ORRERY_FE_27, ORRERY_FE_26,          \
                                 ORRERY_FE_25, ORRERY_FE_24, ORRERY_FE_23, ORRERY_FE_22,          \
                                 ORRERY_FE_21, ORRERY_FE_20, ORRERY_FE_19, ORRERY_FE_18,          \
                                 ORRERY_FE_17, ORRERY_FE_16, ORRERY_FE_15, ORRERY_FE_14,          \
                                 ORRERY_FE_13, ORRERY_FE_12, ORRERY_FE_11, ORRERY_FE_10,          \
                                 ORRERY_FE_9, ORRERY_FE_8, ORRERY_FE_7, ORRERY_FE_6, ORRERY_FE_5, \
                                 ORRERY_FE_4, ORRERY_FE_3, ORRERY_FE_2, ORRERY_FE_1)(M, __VA_ARGS__))

#define ORRERY_DECLARE_COMPONENT_OF(T) OrreryComponents orrery_components_of(T*);
#define ORRERY_DECLARE_ARCHETYPE_OF(T) OrreryArchetypes orrery_archetypes_of(T*);

/// Lists an env's components, in id order. Use once, inside the env's namespace,
/// after the component structs. Example: ORRERY_COMPONENTS(Position, Velocity, Obs);
#define ORRERY_COMPONENTS(...)                                                                     \
    using OrreryComponents = ::orrery::List<__VA_ARGS__>;                                          \
    ORRERY_FOR_EACH(ORRERY_DECLARE_COMPONENT_OF, __VA_ARGS__)                                      \
    inline constexpr const char* kOrreryComponentNames = #__VA_ARGS__

/// Declares archetype `Name` holding the listed components.
/// Example: ORRERY_ARCHETYPE(Agent, Position, Velocity, Obs);
#define ORRERY_ARCHETYPE(Name, ...)                                                                \
    struct Name {                                                                                  \
        using Components = ::orrery::List<__VA_ARGS__>;                                            \
        static constexpr const char* kName = #Name;                                                \
    }

/// Lists an env's archetypes, in id order. Use once, after ORRERY_ARCHETYPE lines.
#define ORRERY_ARCHETYPES(...)                                                                     \
    using OrreryArchetypes = ::orrery::List<__VA_ARGS__>;                                          \
    ORRERY_FOR_EACH(ORRERY_DECLARE_ARCHETYPE_OF, __VA_ARGS__)                                      \
    inline constexpr const char* kOrreryArchetypeNames = #__VA_ARGS__
