package com.example.model;

/** In the jar, outside the job's packages and named by nothing: left out of user_classes by default. */
public class Unused {
    public long v;

    public Unused() {}
}
