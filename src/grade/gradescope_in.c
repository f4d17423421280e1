/* placeholder: being written */
typedef int proctor_placeholder_gradescope_in;
