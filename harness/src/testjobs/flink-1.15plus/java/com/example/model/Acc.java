package com.example.model;

/** A window's accumulator: named only by the state descriptor the window operator holds. */
public class Acc {
    public long count;

    public Acc() {}
}
